"""truncate_to and truncate_fully_and_start_at: cutting a divergent tail as a follower does,
in the middle of a segment, at a segment boundary, across segments, and across restarts."""

from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from log import LogConfig, PartitionLog, sync_ledger
from log.cleaner import CleaningAborted, CleaningJob, cleanable_range
from tests.log.conftest import BASE_TS, append, crash, produced_batch
from wire.record_batch import Record, decode_records, encode_batch, scan_batches

CONFIG = LogConfig(segment_bytes=1500, index_interval_bytes=150, file_delete_delay_ms=0)
DELAYED = LogConfig(segment_bytes=1500, index_interval_bytes=150, file_delete_delay_ms=60_000)
COMPACT = LogConfig(
    segment_bytes=1500, index_interval_bytes=150, file_delete_delay_ms=0, cleanup_policy="compact"
)


def records(log: PartitionLog) -> list[tuple[int, bytes | None]]:
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        batches = scan_batches(data, from_client=False)
        if not batches:
            # A truncation to the base of a batch that followed a gap (a follower's copy of a
            # compacted log) leaves the end there, past the last record, as Kafka's truncateTo.
            break
        for batch in batches:
            out += [(r.offset, r.value) for r in decode_records(data, batch)]
        offset = batches[-1].next_offset
    return out


def filled(log_dir: str, config: LogConfig = CONFIG, batches: int = 30) -> PartitionLog:
    """Batches of two 100-byte records at offsets 0-1, 2-3, ...; epoch 0 then 1 from offset 30."""
    log = PartitionLog.open(log_dir, config)
    for n in range(batches):
        append(log, produced_batch(count=2, value_size=100), leader_epoch=0 if n < 15 else 1)
    return log


def check_truncated(log: PartitionLog, offset: int) -> None:
    assert log.log_end_offset == offset
    assert [o for o, _ in records(log)] == list(range(offset))
    info = append(log, produced_batch(count=2), leader_epoch=4)
    assert info.first_offset == offset
    assert records(log)[-1][0] == offset + 1


def test_truncate_in_the_middle_of_a_segment(log_dir: str) -> None:
    log = filled(log_dir)
    bases = log.segment_base_offsets
    assert len(bases) > 3
    middle = bases[1] + 4
    assert log.truncate_to(middle)
    assert log.segment_base_offsets == bases[:2]
    assert [tuple(e) for e in log.leader_epochs.epoch_entries()] == [(0, 0)]
    check_truncated(log, middle)
    log.close()
    log = PartitionLog.open(log_dir, CONFIG)
    assert [o for o, _ in records(log)] == list(range(middle + 2))
    assert [tuple(e) for e in log.leader_epochs.epoch_entries()] == [(0, 0), (4, middle)]


def test_truncate_at_a_segment_boundary_keeps_that_segment_empty(log_dir: str) -> None:
    log = filled(log_dir)
    bases = log.segment_base_offsets
    assert log.truncate_to(bases[2])
    assert log.segment_base_offsets == bases[:3]
    assert log.segments[-1].size == 0
    check_truncated(log, bases[2])


def test_truncate_across_segments_after_a_restart(log_dir: str) -> None:
    filled(log_dir).close()
    log = PartitionLog.open(log_dir, CONFIG)
    assert [tuple(e) for e in log.leader_epochs.epoch_entries()] == [(0, 0), (1, 30)]
    assert log.truncate_to(33)
    assert [tuple(e) for e in log.leader_epochs.epoch_entries()] == [(0, 0), (1, 30)]
    assert log.truncate_to(30)
    assert [tuple(e) for e in log.leader_epochs.epoch_entries()] == [(0, 0)]
    assert log.truncate_to(5) and log.log_end_offset == 4, "a batch is never split"
    assert not log.truncate_to(4) and not log.truncate_to(100)
    crash(log)  # the cut was made durable before truncate_to returned
    log = PartitionLog.open(log_dir, CONFIG)
    check_truncated(log, 4)


def test_truncation_rebuilds_producer_state(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    for seq in range(0, 40, 2):
        append(
            log, produced_batch(count=2, value_size=100, producer_id=3, producer_epoch=0, base_sequence=seq)
        )
    log.truncate_to(20)
    (entry,) = log.active_producers()
    assert entry.last_seq == 19
    retry = produced_batch(count=2, value_size=100, producer_id=3, producer_epoch=0, base_sequence=18)
    assert append(log, retry).duplicate
    assert (
        append(log, produced_batch(count=2, producer_id=3, producer_epoch=0, base_sequence=20)).first_offset
        == 20
    )


def test_truncation_drops_aborts_past_the_cut(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    txn = dict(producer_id=8, producer_epoch=0, transactional=True)
    append(log, produced_batch(count=2, base_sequence=0, **txn))
    log.append_marker(8, 0, commit=False, coordinator_epoch=0, now_ms=BASE_TS)
    append(log, produced_batch(count=2, base_sequence=2, **txn))
    log.append_marker(8, 0, commit=False, coordinator_epoch=0, now_ms=BASE_TS)
    assert log.aborted_transactions(0, 100) == [(8, 0), (8, 3)]
    log.truncate_to(5)
    assert log.aborted_transactions(0, 100) == [(8, 0)]
    assert log.last_stable_offset == 3, "the second transaction is open again"
    log.close()
    log = PartitionLog.open(log_dir, CONFIG)
    assert log.aborted_transactions(0, 100) == [(8, 0)]


def test_truncate_fully_and_start_at(log_dir: str) -> None:
    log = filled(log_dir)
    log.truncate_fully_and_start_at(1000)
    assert (log.log_start_offset, log.log_end_offset, records(log)) == (1000, 1000, [])
    assert log.leader_epochs.epoch_entries() == [] and log.active_producers() == []
    append(log, produced_batch(count=2), leader_epoch=9)
    crash(log)
    log = PartitionLog.open(log_dir, CONFIG)
    assert (log.log_start_offset, records(log)[0][0], log.segment_base_offsets) == (1000, 1000, (1000,))
    assert [tuple(e) for e in log.leader_epochs.epoch_entries()] == [(9, 1000)]
    # Below the first segment: the same, as Kafka's truncateTo does.
    assert log.truncate_to(10)
    assert (log.log_start_offset, log.log_end_offset) == (10, 10)


def test_truncation_stops_a_cleaning_pass(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, COMPACT)
    for n in range(60):
        append(log, encode_batch([Record(0, BASE_TS, b"k%d" % (n % 3), b"x" * 100)]))
    assert log.begin_cleaning()
    job = CleaningJob(log, cleanable_range(log, BASE_TS), BASE_TS, 1000)
    job.build_offset_map()
    log.truncate_to(30)
    with pytest.raises(CleaningAborted):
        job.clean_group(job.groups[0])
    job.abandon()
    assert [o for o, _ in records(log)] == list(range(30))
    assert log.begin_cleaning(), "the next pass may start"


@pytest.mark.parametrize("offset", [44, 30, 6, 0])
def test_a_truncation_survives_a_power_cut_once_it_returned(tmp_path, offset: int) -> None:
    """Removed segments (renamed, their deletion delayed), the epoch file and the checkpoint stay
    as the truncation left them.  (``sync_ledger`` never undoes an ``ftruncate``, so this does
    not show that the cut itself was fsynced.)"""
    directory = os.fspath(tmp_path / "t-0")
    with sync_ledger.recording() as ledger:
        log = filled(directory, DELAYED)
        log.flush()
        log.checkpoint()
        log.truncate_to(offset)
        crash(log)
        sync_ledger.pull_the_plug(os.fspath(tmp_path), ledger)
    log = PartitionLog.open(directory, CONFIG)
    assert [o for o, _ in records(log)] == list(range(offset))
    assert [tuple(e) for e in log.leader_epochs.epoch_entries()] == [(0, 0), (1, 30)][
        : (offset > 0) + (offset > 30)
    ]
    check_truncated(log, offset)


def test_a_restart_at_a_new_offset_survives_a_power_cut(tmp_path) -> None:
    directory = os.fspath(tmp_path / "t-0")
    with sync_ledger.recording() as ledger:
        log = filled(directory, DELAYED)
        log.flush()
        log.truncate_fully_and_start_at(500)
        crash(log)
        sync_ledger.pull_the_plug(os.fspath(tmp_path), ledger)
    log = PartitionLog.open(directory, CONFIG)
    assert (log.log_start_offset, log.log_end_offset, log.leader_epochs.epoch_entries()) == (500, 500, [])


def test_flushed_epochs_survive_a_power_cut(tmp_path) -> None:
    directory = os.fspath(tmp_path / "t-0")
    with sync_ledger.recording() as ledger:
        log = filled(directory)
        log.flush()
        log.checkpoint()  # the recovery point is past both epochs: recovery will not see them
        crash(log)
        sync_ledger.pull_the_plug(os.fspath(tmp_path), ledger)
    log = PartitionLog.open(directory, CONFIG)
    assert [tuple(e) for e in log.leader_epochs.epoch_entries()] == [(0, 0), (1, 30)]


# ------------------------------------------------------------------------------------------------
# Model: random leader and follower appends, truncations and restarts

Batch = tuple[int, int, int, bytes]  # base offset, last offset, epoch, value of every record

operations = st.lists(
    st.one_of(
        st.tuples(st.just("lead"), st.integers(1, 4), st.integers(0, 2)),
        st.tuples(st.just("follow"), st.integers(1, 4), st.integers(0, 3)),
        st.tuples(st.just("truncate"), st.integers(0, 60), st.just(0)),
        st.tuples(st.just("reopen"), st.booleans(), st.just(0)),
    ),
    max_size=25,
)


def model_epochs(batches: list[Batch]) -> list[tuple[int, int]]:
    entries: list[tuple[int, int]] = []
    for base, _, epoch, _ in batches:
        if not entries or epoch > entries[-1][0]:
            entries.append((epoch, base))
    return entries


@settings(max_examples=40, deadline=None)
@given(operations)
def test_random_appends_and_truncations_match_the_model(ops: list[tuple[str, int, int]]) -> None:
    with tempfile.TemporaryDirectory() as root:
        directory = os.path.join(root, "t-0")
        log = PartitionLog.open(directory, CONFIG)
        batches: list[Batch] = []
        epoch = 0
        for n, (kind, a, b) in enumerate(ops):
            value = b"%03d" % n * 30
            if kind == "lead":
                epoch += b
                produced = encode_batch([Record(i, BASE_TS, None, value) for i in range(a)])
                info = append(log, produced, leader_epoch=epoch)
                batches.append((info.first_offset, info.last_offset, epoch, value))
            elif kind == "follow":
                epoch += 1 if b == 3 else 0
                base = log.log_end_offset + b  # gaps, as compaction leaves them
                data = encode_batch(
                    [Record(base + i, BASE_TS, None, value) for i in range(a)],
                    base_offset=base,
                    partition_leader_epoch=epoch,
                )
                view = memoryview(data)
                log.append_as_follower(view, scan_batches(view, from_client=False))
                batches.append((base, base + a - 1, epoch, value))
            elif kind == "truncate":
                if batches:
                    cut = batches[a % len(batches)][0]
                    log.truncate_to(cut)
                    batches = [x for x in batches if x[1] < cut]
                    low = batches[-1][1] + 1 if batches else 0
                    assert low <= log.log_end_offset <= cut
            else:
                if a:
                    log.close()
                else:
                    crash(log)
                log = PartitionLog.open(directory, CONFIG)
            expected = [(base + i, v) for base, last, _, v in batches for i in range(last - base + 1)]
            assert records(log) == expected
            assert [tuple(e) for e in log.leader_epochs.epoch_entries()] == model_epochs(batches)
        log.close()
