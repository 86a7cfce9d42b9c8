"""Helpers for the log engine tests: building produced batches and appending them."""

from __future__ import annotations

import os

import pytest

from log import AppendInfo, LogConfig, PartitionLog
from wire.record_batch import Record, encode_batch, scan_batches

BASE_TS = 1_700_000_000_000


def produced_batch(
    count: int = 1,
    value_size: int = 10,
    timestamp: int = BASE_TS,
    timestamps: list[int] | None = None,
    **kwargs: int,
) -> bytearray:
    """A batch as a producer sends it (base offset 0), values filled to ``value_size``."""
    stamps = timestamps or [timestamp] * count
    records = [Record(i, stamps[i], b"k%d" % i, bytes([65 + i % 26]) * value_size) for i in range(count)]
    return encode_batch(records, **kwargs)


def append(log: PartitionLog, batch: bytearray, now_ms: int = BASE_TS, leader_epoch: int = 0) -> AppendInfo:
    view = memoryview(batch)
    return log.append(view, scan_batches(view), leader_epoch, now_ms)


def crash(log: PartitionLog) -> None:
    """Simulate a process crash: drop file descriptors without any clean-shutdown work."""
    for segment in log._segments:
        segment.close()


@pytest.fixture
def log_dir(tmp_path) -> str:
    return os.fspath(tmp_path / "topic-0")


@pytest.fixture
def small_config() -> LogConfig:
    return LogConfig(segment_bytes=16 * 1024, index_interval_bytes=256)


def replicate(leader: PartitionLog, follower: PartitionLog, max_bytes: int = 1 << 20) -> int:
    """Fetch as a follower does (from its log end, past the leader's high watermark) and append
    what comes back with ``append_as_follower`` until caught up; returns the appends made."""
    appends = 0
    while follower.log_end_offset < leader.log_end_offset:
        slices = leader.read_slices(follower.log_end_offset, max_bytes, upto=leader.log_end_offset)
        assert slices, "a follower behind its leader always gets a batch"
        view = memoryview(bytearray(b"".join(os.pread(s.fd, s.length, s.position) for s in slices)))
        follower.append_as_follower(view, scan_batches(view, from_client=False))
        appends += 1
    return appends
