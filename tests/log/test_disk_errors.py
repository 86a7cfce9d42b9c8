"""Disk failures during rolls, retention and cleaning take only the affected log offline, and
an offline log comes back once its disk takes writes again.

Failures are injected in-process (a full disk on the next file creation, a read-only
descriptor), never with permissions, which do not stop root.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import os

import pytest

from log import KafkaStorageError, LogConfig, PartitionLog
from log.cleaner import LogCleaner
from log.leader_epochs import LEADER_EPOCH_FILE, UNDEFINED_EPOCH, EpochEntry, LeaderEpochCache
from tests.log.conftest import BASE_TS, append, crash, produced_batch
from tests.log.test_cleaner import COMPACT, put, stored


def full_disk_for(monkeypatch, suffix: str) -> None:
    """Creating any file ending in ``suffix`` fails with ENOSPC from now on."""
    real_open = os.open

    def open_unless_new(path: str, flags: int, *args: int) -> int:
        if str(path).endswith(suffix) and not os.path.exists(path):
            raise OSError(errno.ENOSPC, "No space left on device", path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", open_unless_new)


def test_a_roll_on_a_full_disk_takes_the_log_offline(log_dir: str, monkeypatch) -> None:
    config = LogConfig(segment_bytes=600)
    log = PartitionLog.open(log_dir, config)
    append(log, produced_batch(value_size=400))
    full_disk_for(monkeypatch, ".log")
    with pytest.raises(KafkaStorageError):
        append(log, produced_batch(value_size=400))  # needs a new segment
    with pytest.raises(KafkaStorageError):
        log.read(0, 100)
    monkeypatch.undo()
    crash(log)
    log = PartitionLog.open(log_dir, config)
    assert log.log_end_offset == 1, "what was acknowledged before is intact"


def test_cleaning_on_a_full_disk_leaves_the_data_alone(log_dir: str, monkeypatch) -> None:
    log = PartitionLog.open(log_dir, COMPACT)
    for n in range(30):
        put(log, [(b"k%d" % (n % 3), b"x" * 100)])
    before = stored(log)
    job = LogCleaner().next_job([log], BASE_TS)
    assert job is not None
    full_disk_for(monkeypatch, ".cleaned")
    with pytest.raises(KafkaStorageError):
        job.run()
    monkeypatch.undo()
    assert not log.is_online
    assert not [name for name in os.listdir(log_dir) if ".cleaned" in name]
    crash(log)
    assert stored(PartitionLog.open(log_dir, COMPACT)) == before


def test_retention_failing_to_rename_takes_the_log_offline(log_dir: str, monkeypatch) -> None:
    config = LogConfig(segment_bytes=600, retention_ms=1000)
    log = PartitionLog.open(log_dir, config)
    for n in range(3):
        append(log, produced_batch(value_size=400, timestamp=BASE_TS + n), now_ms=BASE_TS + n)

    def failing_rename(source: str, target: str) -> None:
        raise OSError(errno.EIO, "Input/output error", source)

    monkeypatch.setattr(os, "replace", failing_rename)
    with pytest.raises(KafkaStorageError):
        log.delete_old_segments(BASE_TS + 10_000)
    monkeypatch.undo()
    assert not log.is_online and log.delete_old_segments(BASE_TS + 10_000) == 0
    crash(log)
    reopened = PartitionLog.open(log_dir, dataclasses.replace(config, file_delete_delay_ms=0))
    assert reopened.log_end_offset == 3


def fail_writes_with(monkeypatch, error: int) -> None:
    """Every ``pwrite`` (appends) and ``write`` (the storage probe) fails with ``error``."""

    def failing(*_args: object) -> int:
        raise OSError(error, os.strerror(error))

    monkeypatch.setattr(os, "pwrite", failing)
    monkeypatch.setattr(os, "write", failing)


def bring_back(log: PartitionLog) -> bool:
    """What the broker's retry loop does: reopen in a worker thread, adopt on the event loop."""
    recovered = log.reopen_after_disk_error()
    return recovered is not None and log.adopt_recovered(recovered)


def test_a_full_disk_is_logged_and_the_log_comes_back_once_space_is_free(
    log_dir: str, monkeypatch, caplog
) -> None:
    log = PartitionLog.open(log_dir, LogConfig())
    assert append(log, produced_batch(value_size=100)).first_offset == 0
    fail_writes_with(monkeypatch, errno.ENOSPC)
    with caplog.at_level(logging.DEBUG, logger="log.partition_log"):
        with pytest.raises(KafkaStorageError):
            append(log, produced_batch(value_size=100))
        with pytest.raises(KafkaStorageError):
            append(log, produced_batch(value_size=100))  # refused: already offline
        with pytest.raises(OSError):
            bring_back(log)  # the disk is still full
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, "one ERROR per change of state, not per refused request"
    assert "ENOSPC" in errors[0] and "errno 28" in errors[0]
    assert os.path.join(log_dir, "00000000000000000000.log") in errors[0]
    assert not log.is_online
    monkeypatch.undo()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="log.partition_log"):
        assert bring_back(log)
    assert log.is_online
    assert any("back online" in r.getMessage() for r in caplog.records)
    assert append(log, produced_batch(value_size=100)).first_offset == 1, "offsets stay contiguous"
    assert log.read(0, 1 << 20).count(b"A" * 100) == 2
    assert not bring_back(log), "an online log has nothing to recover"
    log.close()


def test_a_first_append_that_cannot_write_the_epoch_checkpoint_appends_nothing(
    log_dir: str, monkeypatch
) -> None:
    """KAFKA_STORAGE_ERROR must mean "not stored": a producer without idempotence retries it."""
    log = PartitionLog.open(log_dir, LogConfig())
    full_disk_for(monkeypatch, LEADER_EPOCH_FILE + ".tmp")
    with pytest.raises(KafkaStorageError):
        append(log, produced_batch(value_size=100))
    monkeypatch.undo()
    assert bring_back(log)
    assert log.log_end_offset == 0, "the refused batch is not in the log"
    assert append(log, produced_batch(value_size=100)).first_offset == 0
    assert log.read(0, 1 << 20).count(b"A" * 100) == 1, "the retry is stored once"
    assert log.leader_epochs.epoch_entries() == [EpochEntry(0, 0)]
    log.close()


def test_an_epoch_the_file_did_not_take_is_not_kept_in_memory(log_dir: str, monkeypatch) -> None:
    os.makedirs(log_dir)
    cache = LeaderEpochCache(log_dir)
    full_disk_for(monkeypatch, LEADER_EPOCH_FILE + ".tmp")
    with pytest.raises(OSError):
        cache.assign_if_newer(3, 10)
    assert cache.latest_epoch == UNDEFINED_EPOCH, "the cache says what its file says"
    monkeypatch.undo()
    cache.assign_if_newer(3, 10)  # the retry writes it rather than finding it already there
    reread = LeaderEpochCache.read(log_dir)
    assert reread is not None and reread.epoch_entries() == [EpochEntry(3, 10)]


def test_a_torn_write_left_by_the_failure_is_cut_off_before_coming_back(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig())
    append(log, produced_batch(value_size=100))
    acknowledged = log.read(0, 1 << 20)
    segment_path = os.path.join(log_dir, "00000000000000000000.log")
    with open(segment_path, "ab") as file:  # half a batch, as a write cut short by ENOSPC leaves it
        file.write(bytes(produced_batch(value_size=100))[:50])
    log.went_offline(OSError(errno.ENOSPC, "No space left on device"), segment_path)
    assert bring_back(log)
    assert log.log_end_offset == 1 and log.read(0, 1 << 20) == acknowledged
    assert os.path.getsize(segment_path) == len(acknowledged)
    assert append(log, produced_batch()).first_offset == 1
    log.close()


def test_a_closed_log_is_not_reopened(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig())
    log.went_offline(OSError(errno.EIO, "Input/output error"))
    recovered = log.reopen_after_disk_error()
    assert recovered is not None
    log.close()
    assert not log.adopt_recovered(recovered) and not log.is_online
    assert log.reopen_after_disk_error() is None


def test_only_a_log_that_existed_is_reported_as_recovered_from_an_unclean_shutdown(
    log_dir: str, caplog
) -> None:
    with caplog.at_level(logging.INFO, logger="log.partition_log"):
        log = PartitionLog.open(log_dir, LogConfig())
        append(log, produced_batch())
        crash(log)
        assert not [r for r in caplog.records if "unclean" in r.getMessage()], "a new log is no crash"
        PartitionLog.open(log_dir, LogConfig()).close()
    assert [r for r in caplog.records if "unclean" in r.getMessage()]


def test_a_log_back_from_a_disk_error_keeps_its_replicated_high_watermark(log_dir: str) -> None:
    """The checkpoint holds an older high watermark than replication had set when the disk
    failed; consumers that read up to the newer one must not see it go back on reload."""
    log = PartitionLog.open(log_dir, LogConfig())
    for _ in range(3):
        append(log, produced_batch(value_size=100))
    log.set_replicated_high_watermark(1)
    log.checkpoint()
    log.set_replicated_high_watermark(3)
    log.went_offline(OSError(errno.ENOSPC, "No space left on device"))
    assert bring_back(log)
    assert log.high_watermark == 3
    log.close()
