"""The leader epoch cache: Kafka's file format, its assign/truncate rules and endOffsetFor
(cases after Kafka's LeaderEpochFileCacheTest), and how the log keeps it across restarts."""

from __future__ import annotations

import os

import pytest

from log import LogConfig, PartitionLog
from log.leader_epochs import LEADER_EPOCH_FILE, EpochEntry, LeaderEpochCache
from tests.log.conftest import append, crash, produced_batch

UNDEFINED = (-1, -1)


def cache_with(tmp_path, *entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache(os.fspath(tmp_path))
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_file_is_kafkas_format_and_round_trips(tmp_path) -> None:
    cache_with(tmp_path, (0, 0), (3, 120), (7, 4000))
    assert (tmp_path / LEADER_EPOCH_FILE).read_text() == "0\n3\n0 0\n3 120\n7 4000\n"
    again = LeaderEpochCache.read(os.fspath(tmp_path))
    assert again is not None
    assert again.epoch_entries() == [EpochEntry(0, 0), EpochEntry(3, 120), EpochEntry(7, 4000)]
    assert again.latest_epoch == 7


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1\n0\n",  # unknown version
        "0\n2\n0 0\n",  # fewer entries than the count says
        "0\n1\n0 0\n3 5\n",  # more
        "0\n2\n3 10\n2 20\n",  # epochs going back
        "0\n2\n2 10\n3 5\n",  # offsets going back
        "0\n1\n0 x\n",
        "0\n1\n0  0\n",
        "0\n1\n-1 0\n",
        "\xff\n",
    ],
)
def test_corrupt_file_reads_as_none(tmp_path, text: str) -> None:
    (tmp_path / LEADER_EPOCH_FILE).write_bytes(text.encode("latin-1"))
    assert LeaderEpochCache.read(os.fspath(tmp_path)) is None


def test_missing_file_reads_as_none(tmp_path) -> None:
    assert LeaderEpochCache.read(os.fspath(tmp_path)) is None


def test_empty_cache(tmp_path) -> None:
    cache = LeaderEpochCache(os.fspath(tmp_path))
    assert cache.latest_epoch == -1
    assert cache.end_offset_for(0, 10) == UNDEFINED
    assert cache.end_offset_for(-1, 10) == UNDEFINED


def test_assign_ignores_older_and_repeated_epochs(tmp_path) -> None:
    cache = cache_with(tmp_path, (2, 6), (2, 6), (2, 10), (1, 20))
    assert cache.epoch_entries() == [EpochEntry(2, 6)]
    # The latest epoch again at an earlier offset moves its start back (Kafka's isUpdateNeeded).
    cache.assign(2, 4)
    assert cache.epoch_entries() == [EpochEntry(2, 4)]
    with pytest.raises(ValueError):
        cache.assign(-1, 0)


def test_newer_epoch_below_the_latest_start_replaces_non_monotonic_entries(tmp_path) -> None:
    cache = cache_with(tmp_path, (2, 6), (3, 8), (4, 11))
    cache.assign(5, 8)
    assert cache.epoch_entries() == [EpochEntry(2, 6), EpochEntry(5, 8)]
    cache.assign(6, 0)
    assert cache.epoch_entries() == [EpochEntry(6, 0)]
    assert LeaderEpochCache.read(os.fspath(tmp_path)).epoch_entries() == [EpochEntry(6, 0)]


def test_end_offset_for_kafka_cases(tmp_path) -> None:
    cache = cache_with(tmp_path, (0, 10), (2, 13), (4, 17))
    leo = 25
    assert cache.end_offset_for(4, leo) == (4, leo), "the latest epoch ends at the log end"
    assert cache.end_offset_for(2, leo) == (2, 17), "an older epoch ends where the next starts"
    assert cache.end_offset_for(0, leo) == (0, 13)
    assert cache.end_offset_for(1, leo) == (0, 13), "no exact epoch: the largest below it"
    assert cache.end_offset_for(3, leo) == (2, 17)
    assert cache.end_offset_for(5, leo) == UNDEFINED, "newer than any known epoch"
    assert cache.end_offset_for(-1, leo) == UNDEFINED, "UNDEFINED_EPOCH requested"
    # Below the first epoch: that data is gone, answer with the first known start.
    (tmp_path / "b").mkdir()
    later = cache_with(tmp_path / "b", (5, 11), (6, 12), (7, 13))
    assert later.end_offset_for(4, 0) == (4, 11)


def test_truncate_from_end(tmp_path) -> None:
    cache = cache_with(tmp_path, (2, 6), (3, 8), (4, 11))
    cache.truncate_from_end(12)
    assert cache.epoch_entries() == [EpochEntry(2, 6), EpochEntry(3, 8), EpochEntry(4, 11)]
    cache.truncate_from_end(11)
    assert cache.epoch_entries() == [EpochEntry(2, 6), EpochEntry(3, 8)]
    cache.truncate_from_end(7)
    assert cache.epoch_entries() == [EpochEntry(2, 6)]
    cache.truncate_from_end(0)
    assert cache.epoch_entries() == []
    assert (tmp_path / LEADER_EPOCH_FILE).read_text() == "0\n0\n"


def test_truncate_from_start(tmp_path) -> None:
    cache = cache_with(tmp_path, (2, 6), (3, 8), (4, 11))
    cache.truncate_from_start(5)
    assert cache.epoch_entries() == [EpochEntry(2, 6), EpochEntry(3, 8), EpochEntry(4, 11)]
    cache.truncate_from_start(6)
    assert cache.epoch_entries() == [EpochEntry(2, 6), EpochEntry(3, 8), EpochEntry(4, 11)]
    cache.truncate_from_start(9)
    assert cache.epoch_entries() == [EpochEntry(3, 9), EpochEntry(4, 11)]
    cache.truncate_from_start(11)
    assert cache.epoch_entries() == [EpochEntry(4, 11)]
    cache.truncate_from_start(15)
    assert cache.epoch_entries() == [EpochEntry(4, 15)]
    assert LeaderEpochCache.read(os.fspath(tmp_path)).epoch_entries() == [EpochEntry(4, 15)]


# ------------------------------------------------------------------------------------------------
# The log keeps the cache


def epochs_of(log: PartitionLog) -> list[tuple[int, int]]:
    return [tuple(entry) for entry in log.leader_epochs.epoch_entries()]


def several_epochs(log_dir: str, config: LogConfig) -> PartitionLog:
    """A log written by leaders of epochs 0, 2 and 5: offsets 0-9, 10-19, 20-29."""
    log = PartitionLog.open(log_dir, config)
    for epoch in (0, 2, 5):
        for _ in range(5):
            append(log, produced_batch(count=2, value_size=200), leader_epoch=epoch)
    return log


def test_appends_record_newer_epochs_and_survive_a_restart(log_dir: str, small_config: LogConfig) -> None:
    log = several_epochs(log_dir, small_config)
    append(log, produced_batch(), leader_epoch=3)  # an older epoch is stamped but not recorded
    assert epochs_of(log) == [(0, 0), (2, 10), (5, 20)]
    log.close()
    log = PartitionLog.open(log_dir, small_config)
    assert epochs_of(log) == [(0, 0), (2, 10), (5, 20)]
    log.close()


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_missing_or_corrupt_file_is_rebuilt_from_batch_headers(
    log_dir: str, small_config: LogConfig, damage: str
) -> None:
    several_epochs(log_dir, small_config).close()
    path = os.path.join(log_dir, LEADER_EPOCH_FILE)
    if damage == "missing":
        os.remove(path)
    else:
        with open(path, "w") as file:
            file.write("0\n7\n0 0\n")
    log = PartitionLog.open(log_dir, small_config)
    assert epochs_of(log) == [(0, 0), (2, 10), (5, 20)]
    log.close()
    assert LeaderEpochCache.read(log_dir).epoch_entries() == [(0, 0), (2, 10), (5, 20)]


def test_recovery_drops_epochs_past_the_end_and_adds_recovered_ones(
    log_dir: str, small_config: LogConfig
) -> None:
    log = several_epochs(log_dir, small_config)
    crash(log)
    # The file says less than the log (a lost write) and more (an epoch whose data was lost).
    with open(os.path.join(log_dir, LEADER_EPOCH_FILE), "w") as file:
        file.write("0\n2\n0 0\n9 1000\n")
    log = PartitionLog.open(log_dir, small_config)
    assert epochs_of(log) == [(0, 0), (2, 10), (5, 20)]
    log.close()


def test_log_start_moves_the_first_epoch(log_dir: str, small_config: LogConfig) -> None:
    log = several_epochs(log_dir, small_config)
    log.delete_records(14)
    assert epochs_of(log) == [(2, 14), (5, 20)]
    log.close()
    log = PartitionLog.open(log_dir, small_config)
    assert epochs_of(log) == [(2, 14), (5, 20)]
    log.close()


def test_end_offset_for_epoch_on_the_log(log_dir: str, small_config: LogConfig) -> None:
    log = several_epochs(log_dir, small_config)
    assert log.end_offset_for_epoch(5, 5) == (5, 30)
    assert log.end_offset_for_epoch(2, 5) == (2, 20)
    assert log.end_offset_for_epoch(1, 5) == (0, 10)
    assert log.end_offset_for_epoch(6, 5) == UNDEFINED
    # Leading in epoch 7 with nothing written in it yet: epoch 5 now ends at the log end.
    assert log.end_offset_for_epoch(5, 7) == (5, 30)
    assert log.end_offset_for_epoch(7, 7) == (7, 30)
    log.close()
    empty = PartitionLog.open(os.path.join(os.path.dirname(log_dir), "other-0"), small_config)
    assert empty.end_offset_for_epoch(0, 0) == (0, 0)
    assert empty.end_offset_for_epoch(1, 0) == UNDEFINED
    empty.close()
