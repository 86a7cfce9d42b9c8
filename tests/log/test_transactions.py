"""Transactions in a partition log: markers, the last stable offset, aborted transactions,
read_committed reads, and the producer-state rules around them."""

from __future__ import annotations

import os
import random
import struct
from dataclasses import dataclass, field

import pytest

from log import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    LogConfig,
    PartitionLog,
    TransactionCoordinatorFencedError,
)
from tests.log.conftest import BASE_TS, append, produced_batch
from wire.control_batch import ControlType, EndTxnMarker, read_end_txn_marker
from wire.record_batch import scan_batches

CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=100, file_delete_delay_ms=0)
PIDS = (11, 12, 13)


def send(log: PartitionLog, pid: int, seq: int, count: int = 2, epoch: int = 0, transactional: bool = True):
    batch = produced_batch(
        count=count,
        value_size=40,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=transactional,
    )
    return append(log, batch)


def entry(log: PartitionLog, pid: int):
    return next(e for e in log.active_producers() if e.producer_id == pid)


def txnindex_files(log_dir: str) -> dict[str, bytes]:
    out = {}
    for name in sorted(os.listdir(log_dir)):
        if name.endswith(".txnindex"):
            with open(os.path.join(log_dir, name), "rb") as file:
                out[name] = file.read()
    return out


def stored_batches(log: PartitionLog, start: int = 0) -> list[tuple]:
    """(header, bytes holding it at position 0) of every batch from ``start``."""
    out = []
    offset = start
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        for batch in scan_batches(data, from_client=False):
            out.append((batch, data[batch.position : batch.end_position]))
            offset = batch.next_offset
    return out


@dataclass
class Model:
    """What the log must say, kept by the test alongside its appends."""

    open: dict[int, int] = field(default_factory=dict)  # pid -> first offset
    aborted: list[tuple[int, int, int]] = field(default_factory=list)  # (pid, first, marker), marker order
    sequences: dict[int, int] = field(default_factory=dict)

    def lso(self, log: PartitionLog) -> int:
        return min(self.open.values(), default=log.high_watermark)

    def aborted_between(self, fetch: int, upper: int) -> list[tuple[int, int]]:
        return [(pid, first) for pid, first, marker in self.aborted if marker >= fetch and first < upper]


def interleave(log: PartitionLog, model: Model, steps: int, seed: int) -> None:
    """Random transactions of three producers, plain batches between them; segments roll."""
    rng = random.Random(seed)
    for _ in range(steps):
        pid = rng.choice(PIDS + (-1,))
        if pid == -1:
            append(log, produced_batch(count=1, value_size=30))
        elif pid in model.open and rng.random() < 0.35:
            commit = rng.random() < 0.5
            marker = log.append_marker(pid, 0, commit, 0, BASE_TS).first_offset
            first = model.open.pop(pid)
            if not commit:
                model.aborted.append((pid, first, marker))
        else:
            count = rng.randint(1, 3)
            seq = model.sequences.get(pid, 0)
            info = send(log, pid, seq, count)
            model.sequences[pid] = seq + count
            model.open.setdefault(pid, info.first_offset)


def check_against(log: PartitionLog, model: Model) -> None:
    end = log.log_end_offset
    assert log.last_stable_offset == model.lso(log)
    for fetch in range(0, end + 1, 3):
        for upper in (fetch + 1, fetch + 9, end):
            assert log.aborted_transactions(fetch, upper) == model.aborted_between(fetch, upper), (
                fetch,
                upper,
            )
    for pid in PIDS:
        assert entry(log, pid).current_txn_first_offset == model.open.get(pid, -1)


def test_commit_closes_the_transaction_with_kafkas_marker(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    append(log, produced_batch(count=3))
    assert send(log, 11, 0).first_offset == 3
    assert entry(log, 11).current_txn_first_offset == 3
    assert (log.high_watermark, log.last_stable_offset) == (5, 3)
    assert send(log, 11, 2).first_offset == 5, "a second batch joins the open transaction"
    assert entry(log, 11).current_txn_first_offset == 3
    info = log.append_marker(11, 0, True, 4, BASE_TS + 1)
    assert (info.first_offset, info.last_offset, info.log_start_offset) == (7, 7, 0)
    assert log.last_stable_offset == log.high_watermark == 8
    assert (entry(log, 11).current_txn_first_offset, entry(log, 11).coordinator_epoch) == (-1, 4)
    marker, data = stored_batches(log)[-1]
    assert marker.is_control and marker.is_transactional and marker.base_offset == 7
    assert (marker.producer_id, marker.producer_epoch, marker.base_sequence) == (11, 0, -1)
    assert read_end_txn_marker(data, marker._replace(position=0)) == EndTxnMarker(ControlType.COMMIT, 4)
    assert txnindex_files(log_dir) == {}, "only aborts are indexed"


def test_abort_is_indexed_in_kafkas_layout(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 11, 0)
    send(log, 12, 0)  # still open when 11 aborts: the stable offset after the abort
    marker = log.append_marker(11, 0, False, 0, BASE_TS).first_offset
    [(name, data)] = txnindex_files(log_dir).items()
    base = log.segment_base_offsets[-1]
    assert name == f"{base:020d}.txnindex"
    assert data == struct.pack(">hqqqq", 0, 11, 0, marker, 2)
    log.append_marker(12, 0, False, 0, BASE_TS)
    assert txnindex_files(log_dir)[name][34:] == struct.pack(">hqqqq", 0, 12, 2, 5, 6), (
        "nothing open after it: the offset after the marker"
    )
    assert log.aborted_transactions(0, log.log_end_offset) == [(11, 0), (12, 2)]


def test_lso_follows_the_earliest_open_transaction(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 11, 0)  # 0-1
    send(log, 12, 0)  # 2-3
    send(log, 11, 2)  # 4-5
    assert log.last_stable_offset == 0
    log.append_marker(11, 0, True, 0, BASE_TS)  # 6
    assert log.last_stable_offset == 2
    send(log, 11, 4)  # 7-8: a new transaction of 11
    log.append_marker(12, 0, False, 0, BASE_TS)  # 9
    assert log.last_stable_offset == 7
    log.append_marker(11, 0, True, 0, BASE_TS)  # 10
    assert log.last_stable_offset == log.high_watermark == 11


def test_lso_never_passes_the_high_watermark(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 11, 0)
    log.append_marker(11, 0, True, 0, BASE_TS)
    append(log, produced_batch())
    log.hide_last_append_until_synced()
    assert log.last_stable_offset == log.high_watermark == 3
    send(log, 12, 0)
    log.append_marker(12, 0, True, 0, BASE_TS)  # decided, but the marker is not synced yet
    assert log.last_stable_offset == 3
    log.reveal_synced(log.sync_mark())
    assert log.last_stable_offset == log.high_watermark == log.log_end_offset


def test_a_hidden_marker_leaves_its_transaction_undecided(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 11, 0)
    log.append_marker(11, 0, True, 0, BASE_TS)
    log.hide_last_append_until_synced()  # the marker waits for its sync
    assert (log.high_watermark, log.last_stable_offset) == (2, 0)
    log.reveal_synced(log.sync_mark())
    assert log.last_stable_offset == 3


def test_interleaved_transactions_match_the_model(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    model = Model()
    interleave(log, model, steps=150, seed=3)
    assert len(log.segment_base_offsets) > 5 and len(model.aborted) > 5
    check_against(log, model)


def test_marker_without_a_transaction_is_written_and_changes_nothing(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    append(log, produced_batch())
    assert log.append_marker(99, 2, False, 0, BASE_TS).first_offset == 1
    assert log.last_stable_offset == log.high_watermark == 2
    assert log.aborted_transactions(0, 2) == [] and txnindex_files(log_dir) == {}
    assert stored_batches(log)[-1][0].is_control


def test_stale_markers_are_refused_and_write_nothing(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 11, 0, epoch=3)
    log.append_marker(11, 3, True, 5, BASE_TS)
    send(log, 11, 2, epoch=3)
    end = log.log_end_offset
    with pytest.raises(InvalidProducerEpochError):
        log.append_marker(11, 2, False, 5, BASE_TS)
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_marker(11, 3, False, 4, BASE_TS)
    assert log.log_end_offset == end and entry(log, 11).current_txn_first_offset == 3
    log.append_marker(11, 3, False, 5, BASE_TS)
    assert log.aborted_transactions(0, end) == [(11, 3)]


def test_a_marker_with_a_bumped_epoch_starts_that_epoch(log_dir: str) -> None:
    """Transactions v2: the coordinator writes the marker with the producer's next epoch."""
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 11, 0, epoch=0)
    log.append_marker(11, 1, True, 0, BASE_TS)
    assert entry(log, 11).epoch == 1
    with pytest.raises(InvalidProducerEpochError):
        send(log, 11, 2, epoch=0)
    assert send(log, 11, 0, epoch=1).first_offset == 3


def test_plain_write_inside_an_open_transaction_is_invalid(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 11, 0)
    with pytest.raises(InvalidTxnStateError):
        send(log, 11, 2, transactional=False)
    assert log.log_end_offset == 2
    log.append_marker(11, 0, True, 0, BASE_TS)
    assert send(log, 11, 2, transactional=False).first_offset == 3


def test_producers_with_open_transactions_do_not_expire(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 11, 0)
    send(log, 12, 0, transactional=False)
    log.remove_expired_producers(now_ms=2**62, expiration_ms=1000)
    assert [e.producer_id for e in log.active_producers()] == [11]
    assert log.last_stable_offset == 0


def committed_batches(log: PartitionLog, offset: int, max_bytes: int) -> tuple[list, list]:
    """The batch headers a read_committed fetch returns, and its aborted transactions."""
    slices, aborted = log.read_committed(offset, max_bytes)
    batches = []
    for piece in slices:
        batches += scan_batches(os.pread(piece.fd, piece.length, piece.position), from_client=False)
    return batches, aborted


def committed_read(log: PartitionLog, offset: int, max_bytes: int = 1 << 20) -> tuple[list, list]:
    """``committed_batches`` with base offsets for headers."""
    batches, aborted = committed_batches(log, offset, max_bytes)
    return [b.base_offset for b in batches], aborted


def test_read_committed_stops_before_the_first_open_transaction(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig())
    append(log, produced_batch())  # 0
    send(log, 11, 0)  # 1-2, aborted below
    send(log, 12, 0)  # 3-4, open
    append(log, produced_batch())  # 5
    log.append_marker(11, 0, False, 0, BASE_TS)  # 6
    assert log.last_stable_offset == 3
    assert committed_read(log, 0) == ([0, 1], [(11, 1)])
    assert committed_read(log, 3) == ([], [])
    assert log.read_slices(3, 1 << 20), "read_uncommitted still reads up to the high watermark"
    log.append_marker(12, 0, True, 0, BASE_TS)  # 7
    assert committed_read(log, 0) == ([0, 1, 3, 5, 6, 7], [(11, 1)])
    assert committed_read(log, 3) == ([3, 5, 6, 7], [(11, 1)]), "the abort marker is at 6"
    assert committed_read(log, 7) == ([7], [])


def test_read_committed_aborted_list_ends_after_the_last_batch_returned(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig())
    append(log, produced_batch(value_size=200))  # 0
    send(log, 11, 0)  # 1-2
    log.append_marker(11, 0, False, 0, BASE_TS)  # 3
    one_batch = len(stored_batches(log)[0][1])
    assert committed_read(log, 0, max_bytes=one_batch) == ([0], []), "the abort begins after it"
    assert committed_read(log, 0) == ([0, 1, 3], [(11, 1)])


def test_read_committed_within_segments(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    model = Model()
    interleave(log, model, steps=120, seed=11)
    stable = log.last_stable_offset
    offset = 0
    while offset < stable:
        batches, aborted = committed_batches(log, offset, max_bytes=300)
        assert batches and batches[0].base_offset <= offset <= batches[0].last_offset
        after = batches[-1].next_offset
        assert after <= stable, "nothing at or past the last stable offset"
        assert aborted == model.aborted_between(offset, after)
        offset = after
    assert committed_read(log, stable) == ([], [])
