"""Disk failures during rolls, retention and cleaning take only the affected log offline.

Failures are injected in-process (a full disk on the next file creation, a read-only
descriptor), never with permissions, which do not stop root.
"""

from __future__ import annotations

import dataclasses
import errno
import os

import pytest

from log import KafkaStorageError, LogConfig, PartitionLog
from log.cleaner import LogCleaner
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

    monkeypatch.setattr(os, "rename", failing_rename)
    with pytest.raises(KafkaStorageError):
        log.delete_old_segments(BASE_TS + 10_000)
    monkeypatch.undo()
    assert not log.is_online and log.delete_old_segments(BASE_TS + 10_000) == 0
    crash(log)
    reopened = PartitionLog.open(log_dir, dataclasses.replace(config, file_delete_delay_ms=0))
    assert reopened.log_end_offset == 3
