"""Replay from real partition logs: the coordinator's state survives closing and reopening them."""

from __future__ import annotations

from pathlib import Path

from coordinator.config import CoordinatorConfig
from coordinator.log_storage import LogStorage
from coordinator.offsets_topic import OFFSETS_TOPIC
from log.cleaner import MAX_MAP_KEYS, CleaningJob, cleanable_range
from log.config import LogConfig
from log.manager import LogManager
from log.partition_log import PartitionLog
from tests.coordinator.conftest import FakeClock, Harness, Topics
from wire.error_codes import ErrorCode as E
from wire.record_batch import scan_batches


def _open_logs(data_dir: Path, config: LogConfig | None = None) -> LogManager:
    """The partition logs under ``data_dir``; reopening replays them."""
    return LogManager([str(data_dir)], lambda _topic: config or LogConfig())


def _storage(manager: LogManager) -> LogStorage:
    def partition_log(partition: int, create: bool) -> PartitionLog | None:
        if create:
            return manager.get_or_create(OFFSETS_TOPIC, partition)
        return manager.get(OFFSETS_TOPIC, partition)

    return LogStorage(partition_log, lambda _partition: 0)  # a single node at leader epoch 0


def _harness_on(manager: LogManager, clock: FakeClock, topics: Topics) -> Harness:
    config = CoordinatorConfig(offsets_topic_partitions=4)
    return Harness(config, clock=clock, storage=_storage(manager), topics=topics)


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


def test_replay_after_the_log_cleaner_compacted_the_offsets_log(tmp_path: Path) -> None:
    """The offsets log grows by one record per commit; the cleaner keeps the latest per key in
    closed segments, and replaying what it left gives the same committed offsets."""
    clock, topics = FakeClock(), Topics(orders=6)
    compacted = LogConfig(cleanup_policy=("compact",), segment_bytes=1024)
    manager = _open_logs(tmp_path, compacted)
    h = _harness_on(manager, clock, topics)
    for offset in range(500):
        h.commit("g", {("orders", offset % 3): offset})
    partition = h.coordinator.partition_for("g")
    log = manager.get(OFFSETS_TOPIC, partition)
    assert sum(1 for _ in _storage(manager).read(partition)) > 500  # the commits and a group record
    assert log.begin_cleaning()
    CleaningJob(log, cleanable_range(log, clock.now), clock.now, MAX_MAP_KEYS).run()
    assert sum(1 for _ in _storage(manager).read(partition)) < 50
    manager.close()

    manager = _open_logs(tmp_path, compacted)
    after = _harness_on(manager, clock, topics)
    assert after.committed("g") == {("orders", 0): 498, ("orders", 1): 499, ("orders", 2): 497}
    manager.close()


def test_transactional_commits_replay_from_partition_logs(tmp_path: Path) -> None:
    """Every TxnOffsetCommit of a producer is written, not only its first (they carry no
    sequence, so none may be taken for a retry of another), and a restart applies exactly the
    committed transactions' offsets."""
    clock, topics = FakeClock(), Topics(orders=2)
    manager = _open_logs(tmp_path)
    h = _harness_on(manager, clock, topics)
    producer = (7, 0)
    partition = h.coordinator.partition_for("g")
    h.commit("g", {("orders", 0): 1}, producer=producer)
    h.commit("g", {("orders", 1): 2}, producer=producer)
    h.coordinator.complete_transaction(partition, producer, commit=True)
    h.commit("g", {("orders", 0): 5}, producer=producer)
    h.coordinator.complete_transaction(partition, producer, commit=False)
    h.commit("g", {("orders", 1): 9}, producer=producer)
    manager.close()

    manager = _open_logs(tmp_path)
    after = _harness_on(manager, clock, topics)
    assert after.committed("g") == {("orders", 0): 1, ("orders", 1): 2}
    after.coordinator.complete_transaction(partition, producer, commit=True)
    assert after.committed("g") == {("orders", 0): 1, ("orders", 1): 9}
    manager.close()


def test_every_write_carries_the_leader_epoch_the_partition_is_led_at(tmp_path: Path) -> None:
    """Coordinator records and markers are stamped with the partition's leader epoch, as every
    leader append is: a cluster's followers truncate a deposed leader's unreplicated tail by
    these epochs (found by the nemesis suite, when they all carried epoch 0)."""
    manager = _open_logs(tmp_path)
    epochs = {0: 3}

    def partition_log(partition: int, create: bool) -> PartitionLog | None:
        return manager.get_or_create(OFFSETS_TOPIC, partition)

    storage = LogStorage(partition_log, epochs.__getitem__)
    storage.append(0, [(b"k", b"v")], 1_000)
    epochs[0] = 5
    storage.append_marker(0, (7, 0), True, 1_001)
    log = manager.get(OFFSETS_TOPIC, 0)
    assert log is not None
    data = log.read(0, 1 << 20)
    assert [b.partition_leader_epoch for b in scan_batches(data, from_client=False)] == [3, 5]
    assert [tuple(e) for e in log.leader_epochs.epoch_entries()] == [(3, 0), (5, 1)]
    manager.close()
