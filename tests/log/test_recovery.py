"""Opening logs: clean restarts, torn tails, corrupt batches, lost indexes."""

from __future__ import annotations

import logging
import os

import pytest

from log import LogConfig, PartitionLog
from log.checkpoint import CHECKPOINT_FILE, PartitionCheckpoint
from log.segment import Segment
from tests.log.conftest import append, crash, produced_batch
from tests.log.test_partition_log import all_records
from wire.record_batch import scan_batches

CONFIG = LogConfig(segment_bytes=8 * 1024, index_interval_bytes=200)


def filled_log(log_dir: str, batches: int = 60) -> PartitionLog:
    log = PartitionLog.open(log_dir, CONFIG)
    for n in range(batches):
        append(log, produced_batch(count=2, value_size=50 + n))
    return log


def files(log_dir: str, suffix: str) -> list[str]:
    return sorted(os.path.join(log_dir, n) for n in os.listdir(log_dir) if n.endswith(suffix))


def read_file(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def index_bytes(log_dir: str) -> dict[str, bytes]:
    paths = files(log_dir, ".index") + files(log_dir, ".timeindex")
    return {os.path.basename(path): read_file(path) for path in paths}


def test_clean_restart_skips_recovery_and_continues_offsets(log_dir: str, monkeypatch) -> None:
    log = filled_log(log_dir)
    end, bases = log.log_end_offset, log.segment_base_offsets
    log.close()
    assert PartitionCheckpoint.read(log_dir) == PartitionCheckpoint(0, end, True)
    indexes = index_bytes(log_dir)

    def no_recovery(self, interval):
        raise AssertionError("a clean shutdown must not trigger recovery")

    monkeypatch.setattr(Segment, "recover", no_recovery)
    log = PartitionLog.open(log_dir, CONFIG)
    assert (log.log_end_offset, log.segment_base_offsets) == (end, bases)
    assert index_bytes(log_dir) == indexes
    assert PartitionCheckpoint.read(log_dir).clean_shutdown is True, "opening alone changes nothing"
    assert append(log, produced_batch()).first_offset == end
    assert PartitionCheckpoint.read(log_dir).clean_shutdown is False, "the first write marks it dirty"
    assert [r.offset for r in all_records(log)] == list(range(end + 1))


def test_unclean_restart_rebuilds_identical_indexes(log_dir: str) -> None:
    log = filled_log(log_dir)
    end = log.log_end_offset
    log.flush()
    expected_indexes = index_bytes(log_dir)
    crash(log)
    for path in files(log_dir, ".index"):
        os.unlink(path)  # lost, too
    log = PartitionLog.open(log_dir, CONFIG)
    assert log.log_end_offset == end
    rebuilt = index_bytes(log_dir)
    # The active segment's time index gains its final entry only on roll/close; compare the rest.
    assert {k: rebuilt[k] for k in expected_indexes if k.endswith(".index")} == {
        k: v for k, v in expected_indexes.items() if k.endswith(".index")
    }
    assert [r.offset for r in all_records(log)] == list(range(end))


@pytest.mark.parametrize("damage", ["cut", "garbage", "crc", "zeros"])
def test_torn_or_corrupt_tail_is_truncated(log_dir: str, damage: str, caplog) -> None:
    log = filled_log(log_dir)
    active = files(log_dir, ".log")[-1]
    active_batches = scan_batches(read_file(active), from_client=False)
    assert len(active_batches) >= 3
    survivor_end = active_batches[-2].next_offset  # the last batch gets damaged
    last = active_batches[-1]
    crash(log)
    with open(active, "r+b") as f:
        if damage == "cut":
            f.truncate(last.position + 20)
        elif damage == "garbage":
            f.truncate(last.position)
            f.seek(last.position)
            f.write(b"\xde\xad\xbe\xef" * 100)
        elif damage == "crc":
            f.seek(last.position + last.size - 3)
            f.write(b"\xff\xff\xff")
        else:  # a file system that extended the file without the data (zeros)
            f.truncate(last.position)
            f.seek(last.position)
            f.write(bytes(4096))
    with caplog.at_level(logging.WARNING):
        log = PartitionLog.open(log_dir, CONFIG)
    assert "truncating" in caplog.text
    assert log.log_end_offset == survivor_end
    assert os.path.getsize(active) == last.position
    assert [r.offset for r in all_records(log)] == list(range(survivor_end))
    assert append(log, produced_batch(count=2)).first_offset == survivor_end
    log.close()
    log = PartitionLog.open(log_dir, CONFIG)
    assert log.log_end_offset == survivor_end + 2


def test_corruption_in_an_unflushed_older_segment_drops_later_segments(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    log.flush()  # recovery point 0: everything after it must be recovered
    for _ in range(60):
        append(log, produced_batch(count=2, value_size=100))
    first, second = files(log_dir, ".log")[:2]
    segment_batches = scan_batches(read_file(second), from_client=False)
    crash(log)
    middle = segment_batches[len(segment_batches) // 2]
    with open(second, "r+b") as f:
        f.seek(middle.position + 30)
        f.write(b"\x00\x01\x02")
    log = PartitionLog.open(log_dir, CONFIG)
    assert log.log_end_offset == middle.base_offset
    assert files(log_dir, ".log") == [first, second]
    assert [r.offset for r in all_records(log)] == list(range(middle.base_offset))


def test_recovery_starts_at_the_recovery_point(log_dir: str, monkeypatch) -> None:
    log = filled_log(log_dir)
    log.flush()
    log.checkpoint()
    segments = len(log.segment_base_offsets)
    crash(log)
    recovered: list[int] = []
    real_recover = Segment.recover

    def spy(self, interval):
        recovered.append(self.base_offset)
        return real_recover(self, interval)

    monkeypatch.setattr(Segment, "recover", spy)
    PartitionLog.open(log_dir, CONFIG)
    assert segments > 1 and recovered == [log.segment_base_offsets[-1]]


def test_missing_checkpoint_means_full_recovery(log_dir: str) -> None:
    log = filled_log(log_dir)
    end = log.log_end_offset
    log.close()
    os.unlink(os.path.join(log_dir, CHECKPOINT_FILE))
    log = PartitionLog.open(log_dir, CONFIG)
    assert log.log_end_offset == end and log.log_start_offset == 0


@pytest.mark.parametrize("damage", ["missing", "torn entry", "points past the data"])
def test_damaged_index_is_rebuilt_on_clean_open(log_dir: str, damage: str) -> None:
    log = filled_log(log_dir, batches=200)
    end = log.log_end_offset
    log.close()
    index = files(log_dir, ".index")[0]
    original = read_file(index)
    if damage == "missing":
        os.unlink(index)
    else:
        with open(index, "r+b") as f:
            f.seek(0, os.SEEK_END)
            f.write(b"\x00\x00\x00\x01" if damage == "torn entry" else b"\x00\x00\x00\x01\x7f\x00\x00\x00")
    log = PartitionLog.open(log_dir, CONFIG)
    assert read_file(index) == original
    assert [r.offset for r in all_records(log)] == list(range(end))


def test_stray_files_are_cleaned_up(log_dir: str) -> None:
    log = filled_log(log_dir, batches=5)
    log.close()
    for name in ("00000000000000099999.index", "00000000000000099999.timeindex", "partition.checkpoint.tmp"):
        open(os.path.join(log_dir, name), "wb").close()
    PartitionLog.open(log_dir, CONFIG).close()
    assert not {"00000000000000099999.index", "partition.checkpoint.tmp"} & set(os.listdir(log_dir))
