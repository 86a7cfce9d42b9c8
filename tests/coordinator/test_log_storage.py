"""Replay from real partition logs: the coordinator's state survives closing and reopening them."""

from __future__ import annotations

from pathlib import Path

from coordinator.config import CoordinatorConfig
from coordinator.log_storage import LogStorage
from coordinator.offsets_topic import OFFSETS_TOPIC
from log.config import LogConfig
from log.manager import LogManager
from log.partition_log import PartitionLog
from tests.coordinator.conftest import FakeClock, Harness, Topics
from wire.error_codes import ErrorCode as E


def _open_logs(data_dir: Path) -> LogManager:
    """The partition logs under ``data_dir`` with default settings; reopening replays them."""
    return LogManager([str(data_dir)], lambda _topic: LogConfig())


def _storage(manager: LogManager, compact_after: int = 10_000) -> LogStorage:
    def partition_log(partition: int, create: bool) -> PartitionLog | None:
        if create:
            return manager.get_or_create(OFFSETS_TOPIC, partition)
        return manager.get(OFFSETS_TOPIC, partition)

    return LogStorage(partition_log, compact_after=compact_after)


def _harness_on(
    manager: LogManager, clock: FakeClock, topics: Topics, compact_after: int = 10_000
) -> Harness:
    config = CoordinatorConfig(offsets_topic_partitions=4)
    return Harness(config, clock=clock, storage=_storage(manager, compact_after), topics=topics)


def test_groups_and_offsets_replay_from_partition_logs(tmp_path: Path) -> None:
    clock, topics = FakeClock(), Topics(orders=6)
    manager = _open_logs(tmp_path)
    h = _harness_on(manager, clock, topics)
    generation, members = h.stable_group("g", "a", "b")
    h.commit("g", {("orders", 0): 100, ("orders", 1): 200}, generation=generation, member_id=members["a"])
    h.commit("simple", {("orders", 3): 3})
    h.commit("gone", {("orders", 4): 4})
    assert h.coordinator.delete_groups(["gone"])[0]["error_code"] == E.NONE
    manager.close()

    manager = _open_logs(tmp_path)
    after = _harness_on(manager, clock, topics)
    assert after.committed("g") == {("orders", 0): 100, ("orders", 1): 200}
    assert after.committed("simple") == {("orders", 3): 3}
    assert after.state("gone") == "Dead"
    assert after.state("g") == "Stable"
    assert after.heartbeat("g", generation, members["b"]) == E.NONE
    manager.close()


def test_nothing_is_created_until_the_first_write(tmp_path: Path) -> None:
    manager = _open_logs(tmp_path)
    h = _harness_on(manager, FakeClock(), Topics(orders=1))
    assert list(manager.partitions()) == []
    h.commit("g", {("orders", 0): 1})
    assert [key for key, _ in manager.partitions()] == [(OFFSETS_TOPIC, h.coordinator.partition_for("g"))]
    manager.close()


def test_the_offsets_log_is_compacted_by_rewriting_live_records(tmp_path: Path) -> None:
    clock, topics = FakeClock(), Topics(orders=6)
    manager = _open_logs(tmp_path)
    h = _harness_on(manager, clock, topics, compact_after=50)
    for offset in range(500):
        h.commit("g", {("orders", offset % 3): offset})
    h.commit("gone", {("orders", 5): 5})
    h.coordinator.delete_groups(["gone"])
    log = manager.get(OFFSETS_TOPIC, h.coordinator.partition_for("g"))
    assert log.log_start_offset > 400  # everything before the last rewrite is gone
    assert log.log_end_offset - log.log_start_offset < 60
    manager.close()

    manager = _open_logs(tmp_path)
    after = _harness_on(manager, clock, topics, compact_after=50)
    assert after.committed("g") == {("orders", 0): 498, ("orders", 1): 499, ("orders", 2): 497}
    assert after.state("gone") == "Dead"
    manager.close()
