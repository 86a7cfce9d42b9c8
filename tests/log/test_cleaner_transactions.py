"""Compaction with transactions: aborted data goes, a marker stays while its transaction has
data and goes a delete horizon after that (with its index entry), and nothing from the last
stable offset on is touched."""

from __future__ import annotations

from log import PartitionLog
from log.cleaner import cleanable_range
from tests.log.conftest import BASE_TS
from tests.log.test_cleaner import COMPACT, clean, put, stored, stored_batches
from tests.log.test_transactions import txnindex_files


class Producer:
    """A transactional producer writing one keyed record per batch."""

    def __init__(self, log: PartitionLog, pid: int) -> None:
        self.log, self.pid, self.seq = log, pid, 0

    def put(self, key: bytes, value: bytes) -> int:
        offset = put(
            self.log,
            [(key, value)],
            producer_id=self.pid,
            producer_epoch=0,
            base_sequence=self.seq,
            transactional=True,
        )
        self.seq += 1
        return offset

    def end(self, commit: bool) -> int:
        return self.log.append_marker(self.pid, 0, commit, 0, BASE_TS).first_offset


def filler(log: PartitionLog, count: int, tag: bytes) -> None:
    for n in range(count):
        put(log, [(b"filler-%d" % n, tag * 40)])


def markers(log: PartitionLog) -> list[int]:
    return [batch.base_offset for batch, _ in stored_batches(log) if batch.is_control]


def test_aborted_records_go_without_shadowing_committed_ones(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, COMPACT)
    committer, aborter = Producer(log, 21), Producer(log, 22)
    committed_at = committer.put(b"k", b"committed")
    committer.end(commit=True)
    aborted_at = aborter.put(b"k", b"aborted")  # later, so it would win the key if it counted
    aborter.put(b"only-aborted", b"x")
    aborter.end(commit=False)
    filler(log, 40, b"a")  # roll past all of it
    marker_offsets = markers(log)
    aborted_before = log.aborted_transactions(0, log.log_end_offset)
    assert aborted_before == [(22, aborted_at)]
    clean(log, BASE_TS)
    kept = {(offset, key, value) for offset, key, value in stored(log)}
    assert (committed_at, b"k", b"committed") in kept
    assert not any(value == b"aborted" or key == b"only-aborted" for _, key, value in kept)
    assert markers(log) == marker_offsets, "markers stay until their delete horizon"
    assert log.aborted_transactions(0, log.log_end_offset) == aborted_before
    assert list(txnindex_files(log_dir)) == [f"{log.segment_base_offsets[0]:020d}.txnindex"]
    log.close()
    log = PartitionLog.open(log_dir, COMPACT)
    assert log.aborted_transactions(0, log.log_end_offset) == aborted_before


def test_nothing_from_the_last_stable_offset_on_is_cleaned(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, COMPACT)
    filler(log, 20, b"a")
    pending = Producer(log, 23)
    open_at = pending.put(b"filler-0", b"open")  # the same key as older data
    filler(log, 40, b"b")  # later segments, all overwritten again below
    filler(log, 40, b"c")
    assert log.last_stable_offset == open_at
    bound = cleanable_range(log, BASE_TS).first_uncleanable_offset
    assert 0 < bound <= open_at
    after = [record for record in stored(log) if record[0] >= bound]
    clean(log, BASE_TS)
    assert [record for record in stored(log) if record[0] >= bound] == after
    assert (open_at, b"filler-0", b"open") in stored(log)
    pending.end(commit=False)
    filler(log, 40, b"d")
    clean(log, BASE_TS)
    assert (open_at, b"filler-0", b"open") not in stored(log), "aborted once decided"


def test_a_marker_goes_a_delete_horizon_after_its_transaction_data(log_dir: str) -> None:
    """As Kafka's cleaner: the commit marker of a transaction whose records were all compacted
    away, and the abort marker of one whose records were dropped, become tombstones; they and
    the abort's index entry go once ``delete.retention.ms`` has passed, not before."""
    log = PartitionLog.open(log_dir, COMPACT)
    committer, aborter, keeper = Producer(log, 31), Producer(log, 32), Producer(log, 33)
    committer.put(b"k", b"old")
    commit_marker = committer.end(commit=True)
    aborter.put(b"gone", b"x")
    abort_marker = aborter.end(commit=False)
    keeper.put(b"kept", b"v")
    keep_marker = keeper.end(commit=True)
    put(log, [(b"k", b"new")])  # compacts the committed transaction's only record away
    filler(log, 40, b"a")
    assert {commit_marker, abort_marker, keep_marker} <= set(markers(log))
    clean(log, BASE_TS)
    assert {commit_marker, abort_marker, keep_marker} <= set(markers(log)), "horizon set, not passed"
    assert log.aborted_transactions(0, log.log_end_offset) == [(32, abort_marker - 1)]
    clean(log, BASE_TS + COMPACT.delete_retention_ms - 1)
    assert {commit_marker, abort_marker} <= set(markers(log))
    clean(log, BASE_TS + COMPACT.delete_retention_ms)
    assert keep_marker in markers(log) and not {commit_marker, abort_marker} & set(markers(log))
    assert log.aborted_transactions(0, log.log_end_offset) == []
    assert (keep_marker - 1, b"kept", b"v") in stored(log)
    log.close()
    log = PartitionLog.open(log_dir, COMPACT)
    assert log.aborted_transactions(0, log.log_end_offset) == []
    assert keep_marker in markers(log) and commit_marker not in markers(log)
