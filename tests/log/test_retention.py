"""Retention: Kafka's deletion rules as pure decisions, then applied to real logs."""

from __future__ import annotations

import dataclasses
import os

import pytest

from log import LogConfig, OffsetOutOfRangeError, PartitionLog
from log.checkpoint import PartitionCheckpoint
from log.retention import SegmentFacts, segments_to_delete
from tests.log.conftest import BASE_TS, append, produced_batch

HOUR = 3_600_000
NOW = BASE_TS + 10 * HOUR


def facts(*sizes_and_times: tuple[int, int]) -> list[SegmentFacts]:
    """Segments of the given (size, largest timestamp), ten offsets apart."""
    return [SegmentFacts(10 * i, size, ts) for i, (size, ts) in enumerate(sizes_and_times)]


def test_time_rule_deletes_the_expired_prefix_only() -> None:
    config = LogConfig(retention_ms=HOUR)
    segments = facts((100, NOW - 3 * HOUR), (100, NOW - HOUR + 1), (100, NOW - 2 * HOUR), (100, NOW))
    deletion = segments_to_delete(segments, 0, config, NOW)
    assert deletion.count == 1, "stops at the first segment it keeps, even if a later one expired"
    assert "retention.ms" in deletion.reason
    assert segments_to_delete(segments, 0, LogConfig(retention_ms=-1), NOW).count == 0


def test_time_rule_is_strictly_older_than_retention() -> None:
    segments = facts((100, NOW - HOUR), (100, NOW))
    assert segments_to_delete(segments, 0, LogConfig(retention_ms=HOUR), NOW).count == 0
    assert segments_to_delete(segments, 0, LogConfig(retention_ms=HOUR - 1), NOW).count == 1


def test_size_rule_keeps_at_least_retention_bytes() -> None:
    segments = facts((100, NOW), (100, NOW), (100, NOW), (50, NOW))  # 350 bytes
    assert segments_to_delete(segments, 0, LogConfig(retention_bytes=350), NOW).count == 0
    assert segments_to_delete(segments, 0, LogConfig(retention_bytes=250), NOW).count == 1
    assert segments_to_delete(segments, 0, LogConfig(retention_bytes=249), NOW).count == 1
    assert segments_to_delete(segments, 0, LogConfig(retention_bytes=150), NOW).count == 2
    assert segments_to_delete(segments, 0, LogConfig(retention_bytes=0), NOW).count == 4


def test_log_start_rule_applies_to_every_policy() -> None:
    segments = facts((100, 0), (100, 0), (100, 0))
    compact = LogConfig(cleanup_policy=("compact",), retention_ms=1, retention_bytes=1)
    deletion = segments_to_delete(segments, 25, compact, NOW)
    assert deletion == (2, "log start offset breached"), "size and time rules are off for compact"
    assert segments_to_delete(segments, 19, compact, NOW).count == 1


def test_rules_chain_and_an_empty_last_segment_stays() -> None:
    config = LogConfig(retention_ms=HOUR, retention_bytes=100)
    segments = facts((100, NOW), (100, NOW), (100, NOW - 2 * HOUR), (0, -1))
    # log start breach takes the first, size the second, time the third; the empty last stays
    deletion = segments_to_delete(segments, 10, config, NOW)
    assert deletion.count == 3
    assert segments_to_delete(facts((0, -1)), 0, LogConfig(retention_ms=0), NOW).count == 0


def log_with_segments(log_dir: str, config: LogConfig, timestamps: list[int]) -> PartitionLog:
    """One two-record batch per timestamp, each batch in its own segment."""
    log = PartitionLog.open(log_dir, config, clock=lambda: BASE_TS)
    for ts in timestamps:
        append(log, produced_batch(count=2, value_size=300, timestamp=ts), now_ms=max(ts, BASE_TS))
    return log


SMALL = LogConfig(segment_bytes=700, file_delete_delay_ms=0)


def test_time_retention_moves_and_checkpoints_the_log_start(log_dir: str) -> None:
    config = dataclasses.replace(SMALL, retention_ms=HOUR)
    log = log_with_segments(log_dir, config, [BASE_TS, BASE_TS + 1, BASE_TS + 2 * HOUR, BASE_TS + 3 * HOUR])
    assert log.segment_base_offsets == (0, 2, 4, 6)
    assert log.delete_old_segments(BASE_TS + 2 * HOUR) == 2
    assert log.log_start_offset == 4 and log.segment_base_offsets == (4, 6)
    assert PartitionCheckpoint.read(log_dir).log_start_offset == 4
    assert sorted(n for n in os.listdir(log_dir) if n.endswith(".log")) == [
        "00000000000000000004.log",
        "00000000000000000006.log",
    ]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 100)
    assert log.delete_old_segments(BASE_TS + 2 * HOUR) == 0
    log.close()
    log = PartitionLog.open(log_dir, config)
    assert (log.log_start_offset, log.log_end_offset) == (4, 8)


def test_expiring_everything_rolls_a_new_active_segment(log_dir: str) -> None:
    config = dataclasses.replace(SMALL, retention_ms=HOUR)
    log = log_with_segments(log_dir, config, [BASE_TS, BASE_TS + 1])
    assert log.delete_old_segments(BASE_TS + 5 * HOUR) == 2
    assert log.segment_base_offsets == (4,) and log.log_start_offset == log.log_end_offset == 4
    assert log.read(4, 100) == b""
    assert append(log, produced_batch(timestamp=BASE_TS + 5 * HOUR)).first_offset == 4
    assert log.delete_old_segments(BASE_TS + 5 * HOUR) == 0, "young data stays"


def test_size_retention_on_a_real_log(log_dir: str) -> None:
    log = log_with_segments(log_dir, SMALL, [BASE_TS] * 6)
    segment_size = log.segments[0].size
    log.config = dataclasses.replace(SMALL, retention_bytes=3 * segment_size)
    assert log.delete_old_segments(BASE_TS) == 3
    assert log.size_in_bytes == 3 * segment_size and log.log_start_offset == 6


def test_deleted_files_wait_for_the_delay(log_dir: str) -> None:
    config = dataclasses.replace(SMALL, retention_ms=HOUR, file_delete_delay_ms=60_000)
    log = log_with_segments(log_dir, config, [BASE_TS, BASE_TS + 2 * HOUR])
    slices = log.read_slices(0, 10**6)
    now = BASE_TS + 2 * HOUR
    assert log.delete_old_segments(now) == 1
    assert "00000000000000000000.log.deleted" in os.listdir(log_dir)
    assert os.pread(slices[0].fd, 8, 0) == bytes(8), "a reader's descriptor stays valid meanwhile"
    assert log.next_purge_ms == now + 60_000
    log.purge_deleted_segments(now + 59_999)
    assert "00000000000000000000.log.deleted" in os.listdir(log_dir)
    log.purge_deleted_segments(now + 60_000)
    assert not [n for n in os.listdir(log_dir) if n.endswith(".deleted")]
    assert log.next_purge_ms is None


def test_leftover_deleted_files_go_at_start_up(log_dir: str) -> None:
    config = dataclasses.replace(SMALL, retention_ms=HOUR, file_delete_delay_ms=60_000)
    log = log_with_segments(log_dir, config, [BASE_TS, BASE_TS + 2 * HOUR])
    log.delete_old_segments(BASE_TS + 2 * HOUR)
    for segment in log.segments:
        segment.close()  # a crash before the delay passed
    PartitionLog.open(log_dir, config).close()
    assert not [n for n in os.listdir(log_dir) if ".deleted" in n]


def test_retention_waits_while_the_cleaner_works(log_dir: str) -> None:
    config = dataclasses.replace(SMALL, retention_ms=HOUR, cleanup_policy=("compact", "delete"))
    log = log_with_segments(log_dir, config, [BASE_TS, BASE_TS + 2 * HOUR])
    assert log.begin_cleaning()
    assert log.delete_old_segments(BASE_TS + 2 * HOUR) == 0
    log.delete_records(2)
    assert log.segment_base_offsets == (0, 2), "DeleteRecords moves the start, removal waits"
    log.end_cleaning(None)
    assert log.segment_base_offsets == (2,)


def test_segment_without_timestamps_ages_by_file_time(log_dir: str) -> None:
    config = dataclasses.replace(SMALL, retention_ms=HOUR)
    log = log_with_segments(log_dir, config, [-1, -1])
    old = (BASE_TS - HOUR) * 1_000_000
    os.utime(log.segments[0].log_path, ns=(old, old))
    assert log.segments[0].largest_timestamp == BASE_TS - HOUR
    assert log.delete_old_segments(BASE_TS + 1) == 1
