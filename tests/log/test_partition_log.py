"""PartitionLog: appends, reads, rolling, indexes, timestamps, log start, durability."""

from __future__ import annotations

import os

import pytest

from log import (
    KafkaStorageError,
    LogConfig,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    PartitionLog,
)
from tests.log.conftest import BASE_TS, append, produced_batch
from wire.error_codes import ErrorCode
from wire.record_batch import decode_records, scan_batches


def all_records(log: PartitionLog, start: int = 0) -> list:
    """Every record from ``start`` by reading the log the way a consumer does."""
    out = []
    offset = start
    while offset < log.log_end_offset:
        data = log.read(offset, 1000)
        batches = scan_batches(data, from_client=False)
        assert batches, "a read below the log end returns at least one batch"
        for batch in batches:
            out.extend(r for r in decode_records(data, batch) if r.offset >= offset)
        offset = batches[-1].next_offset
    return out


def test_offsets_are_assigned_and_patched(log_dir: str, small_config: LogConfig) -> None:
    log = PartitionLog.open(log_dir, small_config)
    infos = [append(log, produced_batch(count=3), leader_epoch=4) for _ in range(5)]
    assert [(i.first_offset, i.last_offset) for i in infos] == [(3 * n, 3 * n + 2) for n in range(5)]
    assert all(i.log_append_time == -1 and i.log_start_offset == 0 for i in infos)
    assert log.log_end_offset == log.high_watermark == 15
    data = log.read(7, 10**6)
    batches = scan_batches(data, from_client=False)
    assert batches[0].base_offset == 6
    assert {b.partition_leader_epoch for b in batches} == {4}
    assert [r.offset for r in all_records(log)] == list(range(15))


def test_many_small_and_large_batches_round_trip(log_dir: str, small_config: LogConfig) -> None:
    log = PartitionLog.open(
        log_dir, small_config.__class__(segment_bytes=64 * 1024, index_interval_bytes=512)
    )
    expected = []
    for n in range(400):
        size = 30_000 if n % 50 == 0 else 5 + n % 40
        count = 1 + n % 4
        info = append(log, produced_batch(count=count, value_size=size))
        expected.extend((info.first_offset + i, size) for i in range(count))
    got = [(r.offset, len(r.value)) for r in all_records(log)]
    assert got == expected
    assert len(log.segment_base_offsets) > 5


def test_read_edges(log_dir: str, small_config: LogConfig) -> None:
    log = PartitionLog.open(log_dir, small_config)
    assert log.read(0, 100) == b""  # empty log: offset 0 == log end
    for _ in range(10):
        append(log, produced_batch(count=2, value_size=100))
    assert log.read(20, 100) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(21, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)
    one = scan_batches(log.read(0, 1), from_client=False)
    assert len(one) == 1, "at least one whole batch even if larger than max_bytes (KIP-74)"
    size = one[0].size
    three = scan_batches(log.read(0, size * 3 + size // 2), from_client=False)
    assert len(three) == 3, "only whole batches within max_bytes"
    slices = log.read_slices(5, 10**6)
    assert [os.pread(s.fd, s.length, s.position) for s in slices] == [log.read(5, 10**6)]
    assert log.read_slices(20, 100) == []


def test_segments_roll_by_size_and_reads_cross_them(log_dir: str) -> None:
    config = LogConfig(segment_bytes=4096, index_interval_bytes=100)
    log = PartitionLog.open(log_dir, config)
    for _ in range(100):
        append(log, produced_batch(count=1, value_size=200))
    bases = log.segment_base_offsets
    assert len(bases) > 5
    assert all(os.path.getsize(os.path.join(log_dir, f"{b:020d}.log")) <= 4096 for b in bases)
    assert [r.offset for r in all_records(log)] == list(range(100))


def test_segments_roll_by_time_with_message_timestamps(log_dir: str) -> None:
    config = LogConfig(segment_ms=1000)
    log = PartitionLog.open(log_dir, config)
    append(log, produced_batch(timestamp=BASE_TS))
    append(log, produced_batch(timestamp=BASE_TS + 1000))
    assert log.segment_base_offsets == (0,)
    append(log, produced_batch(timestamp=BASE_TS + 1001))
    assert log.segment_base_offsets == (0, 2)


def test_segments_roll_when_the_index_is_full(log_dir: str) -> None:
    config = LogConfig(segment_index_bytes=8 * 3, index_interval_bytes=0)
    log = PartitionLog.open(log_dir, config)
    for _ in range(10):
        append(log, produced_batch())
    assert len(log.segment_base_offsets) >= 2
    assert os.path.getsize(os.path.join(log_dir, "00000000000000000000.index")) <= 24


def test_read_in_the_middle_touches_little_of_the_file(log_dir: str, monkeypatch) -> None:
    config = LogConfig(index_interval_bytes=4096)
    log = PartitionLog.open(log_dir, config)
    for _ in range(5000):
        append(log, produced_batch(count=2, value_size=100))
    segment_size = log.size_in_bytes
    assert len(log.segment_base_offsets) == 1 and segment_size > 1_000_000
    reads: list[int] = []
    real_pread = os.pread

    def counting_pread(fd: int, n: int, offset: int) -> bytes:
        data = real_pread(fd, n, offset)
        reads.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", counting_pread)
    data = log.read(5001, 500)
    assert scan_batches(data, from_client=False)[0].base_offset == 5000
    assert sum(reads) < 64 * 1024, f"read {sum(reads)} bytes of a {segment_size}-byte segment"
    assert len(reads) <= 4


def test_max_message_bytes(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig(max_message_bytes=500))
    with pytest.raises(MessageTooLargeError) as info:
        append(log, produced_batch(value_size=600))
    assert info.value.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert log.log_end_offset == 0


def test_log_append_time(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig(message_timestamp_type="LogAppendTime"))
    info = append(log, produced_batch(count=3, timestamp=5), now_ms=BASE_TS + 77)
    assert info.log_append_time == BASE_TS + 77
    [batch] = scan_batches(log.read(0, 10**6), from_client=False)
    assert batch.is_log_append_time and batch.max_timestamp == BASE_TS + 77
    assert log.offset_for_timestamp(BASE_TS + 77) == (0, BASE_TS + 77)


def test_offset_for_timestamp_with_out_of_order_timestamps(log_dir: str) -> None:
    config = LogConfig(segment_bytes=2048, index_interval_bytes=64)
    log = PartitionLog.open(log_dir, config)
    stamps = [(n * 7919) % 1000 for n in range(300)]  # scrambled, with repeats across batches
    record_stamps = []
    for n in range(0, 300, 3):
        chunk = stamps[n : n + 3]
        append(log, produced_batch(count=3, timestamps=chunk))
        record_stamps.extend(chunk)
    assert len(log.segment_base_offsets) > 3
    for target in [-5, 0, 1, 333, 500, 998, 999, 1000, 5000]:
        expected = next(((o, t) for o, t in enumerate(record_stamps) if t >= target), None)
        assert log.offset_for_timestamp(target) == expected, target
    best = max(record_stamps)
    assert log.max_timestamp_offset() == (record_stamps.index(best), best)


def test_offset_for_timestamp_on_empty_log(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig())
    assert log.offset_for_timestamp(0) is None
    assert log.max_timestamp_offset() is None


def test_delete_records_moves_log_start_and_survives_restart(log_dir: str) -> None:
    config = LogConfig(segment_bytes=1024)
    log = PartitionLog.open(log_dir, config)
    for _ in range(50):
        append(log, produced_batch(count=2, value_size=100))
    segments_before = len(log.segment_base_offsets)
    assert log.delete_records(61) == 61
    assert log.delete_records(10) == 61, "the log start never moves back"
    assert len(log.segment_base_offsets) < segments_before
    assert log.segment_base_offsets[0] <= 61
    with pytest.raises(OffsetOutOfRangeError):
        log.read(59, 100)
    assert scan_batches(log.read(61, 1), from_client=False)[0].base_offset == 60
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records(101)
    assert append(log, produced_batch()).log_start_offset == 61
    log.close()
    log = PartitionLog.open(log_dir, config)
    assert log.log_start_offset == 61 and log.log_end_offset == 101
    assert all_records(log, 61)[0].offset == 61
    assert log.offset_for_timestamp(0) == (61, BASE_TS)


def test_delete_records_up_to_the_end_keeps_offsets(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig(segment_bytes=512))
    for _ in range(20):
        append(log, produced_batch(value_size=100))
    log.delete_records(20)
    assert log.read(20, 100) == b""
    assert append(log, produced_batch()).first_offset == 20
    log.close()
    log = PartitionLog.open(log_dir, LogConfig(segment_bytes=512))
    assert (log.log_start_offset, log.log_end_offset) == (20, 21)


def test_flush_is_cheap_when_nothing_is_dirty(log_dir: str, monkeypatch) -> None:
    log = PartitionLog.open(log_dir, LogConfig())
    append(log, produced_batch())
    calls: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd)))
    log.flush()
    assert calls and log.recovery_point == 1
    calls.clear()
    log.flush()
    assert calls == []


def test_closed_log_refuses_work(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig())
    log.close()
    log.close()  # idempotent
    with pytest.raises(KafkaStorageError):
        append(log, produced_batch())


def test_disk_failure_takes_the_partition_offline(log_dir: str, monkeypatch) -> None:
    log = PartitionLog.open(log_dir, LogConfig())
    append(log, produced_batch())

    def failing_pwrite(fd: int, data: bytes, offset: int) -> int:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "pwrite", failing_pwrite)
    with pytest.raises(KafkaStorageError) as info:
        append(log, produced_batch())
    assert info.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    monkeypatch.undo()
    with pytest.raises(KafkaStorageError):
        log.read(0, 100)
    assert os.path.getsize(os.path.join(log_dir, "00000000000000000000.log")) == len(produced_batch())
