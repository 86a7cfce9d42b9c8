"""Compaction: latest value per key, tombstones, batch fields, dirty ratio and lags, producers."""

from __future__ import annotations

import dataclasses
import os
import threading

import pytest

from log import LogConfig, PartitionLog
from log.cleaner import MAX_MAP_KEYS, CleaningAborted, CleaningJob, LogCleaner, cleanable_range
from log.compacted_batch import delete_horizon
from tests.log.conftest import BASE_TS
from wire.record_batch import Compression, Record, decode_records, encode_batch, scan_batches

COMPACT = LogConfig(
    segment_bytes=1500,
    index_interval_bytes=200,
    cleanup_policy=("compact",),
    delete_retention_ms=1000,
    file_delete_delay_ms=0,
)
Item = tuple[bytes, bytes | None]


def put(log: PartitionLog, items: list[Item], timestamp: int = BASE_TS, **batch_fields: int) -> int:
    """Append one batch of (key, value) records; returns its first offset."""
    batch = encode_batch([Record(i, timestamp, k, v) for i, (k, v) in enumerate(items)], **batch_fields)
    view = memoryview(batch)
    return log.append(view, scan_batches(view), 0, timestamp).first_offset


def stored_batches(log: PartitionLog) -> list[tuple]:
    """Every batch from the log start as (header, records), read the way a consumer reads."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        for batch in scan_batches(data, from_client=False):
            out.append((batch, decode_records(data, batch)))
            offset = batch.next_offset
    return out


def stored(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for _, records in stored_batches(log) for r in records]


def clean(log: PartitionLog, now_ms: int, max_map_keys: int = MAX_MAP_KEYS) -> CleaningJob:
    """One pass whether or not the log is dirty enough (the policy is tested separately)."""
    assert log.begin_cleaning()
    job = CleaningJob(log, cleanable_range(log, now_ms), now_ms, max_map_keys)
    job.run()
    return job


def latest_per_key(appended: list[tuple[int, bytes | None, bytes | None]], before: int) -> set:
    """What compaction may keep of the records below ``before``: each key's last record."""
    last: dict[bytes | None, tuple] = {}
    for record in appended:
        if record[0] < before:
            last[record[1]] = record
    return set(last.values())


@pytest.mark.parametrize(
    "codec", [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
)
def test_latest_value_per_key_at_its_original_offset(log_dir: str, codec: int) -> None:
    log = PartitionLog.open(log_dir, COMPACT)
    appended = []
    for n in range(60):
        items = [(b"key-%d" % ((n * 3 + i) % 7), b"value-%d-%d" % (n, i) * 5) for i in range(3)]
        first = put(log, items, compression=codec)
        appended += [(first + i, k, v) for i, (k, v) in enumerate(items)]
    before = {batch.base_offset: batch for batch, _ in stored_batches(log)}
    active_base = log.segment_base_offsets[-1]
    active_bytes = log.read(active_base, 1 << 20)
    clean(log, BASE_TS)
    after = stored(log)
    kept_below = {r for r in after if r[0] < active_base}
    assert kept_below == latest_per_key(appended, active_base)
    assert [r for r in after if r[0] >= active_base] == [r for r in appended if r[0] >= active_base]
    assert log.read(active_base, 1 << 20) == active_bytes, "the active segment is never touched"
    for batch, _ in stored_batches(log):
        original = before[batch.base_offset]
        assert batch.last_offset == original.last_offset, "offsets never shift"
        assert batch.compression == codec
        assert batch.partition_leader_epoch == original.partition_leader_epoch
    assert log.first_dirty_offset == active_base
    log.close()
    assert stored(PartitionLog.open(log_dir, COMPACT)) == after


def test_tombstones_go_once_their_delete_horizon_passed(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, COMPACT)
    put(log, [(b"a", b"1"), (b"b", b"1")])
    put(log, [(b"a", None), (b"c", b"1")])  # a is deleted
    for n in range(20):
        put(log, [(b"filler-%d" % n, b"x" * 100)])
    clean(log, BASE_TS)
    tombstone_batch = next(b for b, records in stored_batches(log) if any(r.value is None for r in records))
    assert delete_horizon(tombstone_batch) == BASE_TS + 1000
    assert (2, b"a", None) in stored(log), "a tombstone stays for delete.retention.ms"
    assert (0, b"a", b"1") not in stored(log)
    clean(log, BASE_TS + 999)
    assert (2, b"a", None) in stored(log)
    clean(log, BASE_TS + 1000)
    keys = [key for _, key, _ in stored(log)]
    assert b"a" not in keys and b"b" in keys and b"c" in keys


def test_keyless_records_do_not_survive_compaction(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, COMPACT)
    put(log, [(None, b"no key"), (b"k", b"v")])
    for n in range(20):
        put(log, [(b"f%d" % n, b"x" * 100)])
    clean(log, BASE_TS)
    assert (0, None, b"no key") not in stored(log) and (1, b"k", b"v") in stored(log)


def test_producer_fields_survive_and_empty_batches_keep_sequences(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, COMPACT)
    producer = {"producer_id": 42, "producer_epoch": 3}
    put(log, [(b"p", b"1"), (b"q", b"1")], base_sequence=0, **producer)
    put(log, [(b"p", b"2"), (b"q", b"2")], base_sequence=2, **producer)  # the producer's last batch
    put(log, [(b"p", b"3"), (b"q", b"3")])  # supersedes both, no producer
    for n in range(20):
        put(log, [(b"f%d" % n, b"x" * 100)])
    clean(log, BASE_TS)
    batches = {batch.base_offset: (batch, records) for batch, records in stored_batches(log)}
    assert 0 not in batches, "an emptied batch goes"
    kept, records = batches[2]
    assert records == [] and kept.record_count == 0, "the producer's last batch stays, empty"
    assert (kept.producer_id, kept.producer_epoch, kept.base_sequence, kept.last_offset) == (42, 3, 2, 3)
    log.close()
    log = PartitionLog.open(log_dir, COMPACT)
    retry = encode_batch(
        [Record(0, BASE_TS, b"p", b"2"), Record(1, BASE_TS, b"q", b"2")], base_sequence=2, **producer
    )
    view = memoryview(retry)
    info = log.append(view, scan_batches(view), 0, BASE_TS)
    assert info.duplicate and info.first_offset == 2, "a retry is still recognised after compaction"


def test_the_batch_ending_the_cleaned_range_stays_even_empty(log_dir: str) -> None:
    config = dataclasses.replace(COMPACT, segment_bytes=100_000, segment_ms=10)
    log = PartitionLog.open(log_dir, config)
    put(log, [(b"k", b"1")], timestamp=BASE_TS)
    put(log, [(b"k", None)], timestamp=BASE_TS + 100)  # rolled by time: each batch its own segment
    put(log, [(b"other", b"1")], timestamp=BASE_TS + 200)
    assert log.segment_base_offsets == (0, 1, 2)
    clean(log, BASE_TS)
    assert [(b.base_offset, b.record_count) for b, _ in stored_batches(log)] == [(1, 1), (2, 1)]
    assert log.segment_base_offsets == (0, 2), "the two inactive segments were merged"
    clean(log, BASE_TS + 1000)  # the tombstone's horizon passed: its batch empties
    assert [(b.base_offset, b.last_offset, b.record_count) for b, _ in stored_batches(log)] == [
        (1, 1, 0),
        (2, 2, 1),
    ], "an empty batch still says where the cleaned range ends"


def test_dirty_ratio_decides(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, COMPACT)
    for n in range(40):
        put(log, [(b"k%d" % (n % 4), b"x" * 100)])
    cleaner = LogCleaner()
    first = cleaner.next_job([log], BASE_TS)
    assert first is not None and first.cleanable.dirty_ratio == 1.0
    first.run()
    assert cleaner.next_job([log], BASE_TS) is None, "nothing dirty left"
    for n in range(20):
        put(log, [(b"k%d" % (n % 4), b"x" * 100)])
    cleanable = cleanable_range(log, BASE_TS)
    assert cleanable.dirty_ratio > 0.5 and cleanable.worth_cleaning(log.config)
    log.config = dataclasses.replace(COMPACT, min_cleanable_dirty_ratio=0.99)
    assert cleaner.next_job([log], BASE_TS) is None
    log.config = dataclasses.replace(COMPACT, cleanup_policy=("delete",))
    assert cleaner.next_job([log], BASE_TS) is None, "only compacted logs are cleaned"


def test_compaction_lags(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, COMPACT)
    for n in range(30):
        put(log, [(b"k", b"x" * 100)], timestamp=BASE_TS + n * 1000)
    active = log.segment_base_offsets[-1]
    assert cleanable_range(log, BASE_TS + 30_000).first_uncleanable_offset == active
    young = dataclasses.replace(COMPACT, min_compaction_lag_ms=15_000)
    log.config = young
    limited = cleanable_range(log, BASE_TS + 30_000)
    assert 0 < limited.first_uncleanable_offset < active
    job = clean(log, BASE_TS + 30_000)
    assert job.end_offset == limited.first_uncleanable_offset
    assert all(r[0] >= job.end_offset - 1 for r in stored(log)), "only the young part keeps duplicates"
    log.config = dataclasses.replace(COMPACT, min_cleanable_dirty_ratio=1.0, max_compaction_lag_ms=5_000)
    assert cleanable_range(log, BASE_TS + 30_000).needs_compaction_now
    assert LogCleaner().next_job([log], BASE_TS + 30_000) is not None, "max lag overrides the ratio"


def test_a_small_offset_map_spreads_the_work_over_passes(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, COMPACT)
    appended = []
    for n in range(50):
        first = put(log, [(b"k%d" % n, b"x" * 100)])
        appended.append((first, b"k%d" % n, b"x" * 100))
    job = clean(log, BASE_TS, max_map_keys=1)
    assert 0 < job.end_offset < log.segment_base_offsets[-1]
    assert stored(log) == appended, "distinct keys: nothing to remove, offsets unchanged"
    assert clean(log, BASE_TS, max_map_keys=1).end_offset > job.end_offset


def test_closing_stops_a_pass_and_leaves_no_cleaned_files(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, COMPACT)
    for n in range(40):
        put(log, [(b"k%d" % (n % 3), b"x" * 100)])
    assert log.begin_cleaning()
    job = CleaningJob(log, cleanable_range(log, BASE_TS), BASE_TS, MAX_MAP_KEYS)
    job.build_offset_map()
    closer = threading.Thread(target=log.close)
    with log.cleaning_lock:  # the worker is "busy": close must wait for it
        closer.start()
        closer.join(0.2)
        assert closer.is_alive()
    closer.join(10)
    with pytest.raises(CleaningAborted):
        job.clean_group(job.groups[0])
    job.abandon()
    assert not [name for name in os.listdir(log_dir) if ".cleaned" in name]
