"""The failover scenarios' history checker, on small hand-built histories: each kind of failure
is reported, and a clean history (with unacknowledged extras) is not."""

from __future__ import annotations

from compat_tests.kit.history import (
    Acked,
    Batch,
    Read,
    RecordId,
    Writer,
    check,
    decode,
    encode,
    places_of,
    repeated_places,
)


def rec(producer: str, partition: int, sequence: int) -> RecordId:
    return RecordId(producer, partition, sequence)


def read_back(*placed: tuple[int, RecordId | bytes]) -> list[Read]:
    """Reads at consecutive offsets per partition, in the order given."""
    next_offset: dict[int, int] = {}
    reads = []
    for partition, what in placed:
        offset = next_offset.get(partition, 0)
        next_offset[partition] = offset + 1
        value = what if isinstance(what, bytes) else encode(what)
        reads.append(Read(partition, offset, value))
    return reads


def test_values_round_trip_and_foreign_values_are_ignored() -> None:
    assert decode(encode(rec("confluent", 3, 41))) == rec("confluent", 3, 41)
    for foreign in (None, b"", b"hello", b"a:b:c", b"a:1", b"a:1:2:3", b"x:1:" + b"9" * 300):
        assert decode(foreign) is None


def test_clean_history_with_unacknowledged_records_passes() -> None:
    reads = read_back((0, rec("a", 0, 0)), (0, rec("b", 0, 0)), (0, rec("a", 0, 1)), (1, rec("a", 1, 0)))
    acked = [Acked(rec("a", 0, 0), 0), Acked(rec("a", 0, 1), 2), Acked(rec("a", 1, 0), 0)]
    report = check(acked, reads + [Read(0, 3, b"setup record")])
    assert report.ok, str(report)
    assert (report.acked, report.read) == (3, 5)


def test_acknowledged_record_missing_is_lost() -> None:
    reads = read_back((0, rec("a", 0, 0)))
    report = check([Acked(rec("a", 0, 0), 0), Acked(rec("a", 0, 1), 1)], reads)
    assert report.lost == [Acked(rec("a", 0, 1), 1)]
    assert not report.ok
    assert "1 lost" in str(report)


def test_acknowledged_offset_holding_another_record_is_lost() -> None:
    """A leader that lost the record and wrote another one at its offset (a divergent log)."""
    reads = read_back((0, rec("a", 0, 0)), (0, rec("b", 0, 0)))
    report = check([Acked(rec("a", 0, 1), 1), Acked(rec("b", 0, 0), 1)], reads)
    assert report.lost == [Acked(rec("a", 0, 1), 1)]
    assert report.found_instead == {Acked(rec("a", 0, 1), 1): encode(rec("b", 0, 0))}


def test_one_value_at_two_offsets_is_duplicated() -> None:
    reads = read_back((2, rec("a", 2, 0)), (2, rec("a", 2, 1)), (2, rec("a", 2, 1)))
    report = check([Acked(rec("a", 2, 0), 0), Acked(rec("a", 2, 1), 1)], reads)
    assert report.duplicated == {rec("a", 2, 1): [(2, 1), (2, 2)]}
    assert not report.lost and not report.reordered
    assert not report.ok


def test_lower_sequence_at_a_later_offset_is_reordered() -> None:
    reads = read_back((0, rec("a", 0, 0)), (0, rec("a", 0, 2)), (0, rec("b", 0, 5)), (0, rec("a", 0, 1)))
    acked = [Acked(rec("a", 0, 0), 0), Acked(rec("a", 0, 2), 1), Acked(rec("a", 0, 1), 3)]
    report = check(acked, reads)
    assert report.reordered == [(0, rec("a", 0, 2), rec("a", 0, 1))]
    assert not report.lost and not report.duplicated
    assert not report.ok


def test_order_is_judged_per_producer_and_partition() -> None:
    """Interleaved producers and partitions are no reordering; reads may come in any order."""
    reads = read_back((0, rec("a", 0, 0)), (1, rec("a", 1, 7)), (0, rec("b", 0, 9)), (0, rec("a", 0, 1)))
    reads.reverse()
    assert check([], reads).ok


def test_copies_written_as_new_records_are_resent_and_copies_of_one_sequence_duplicated() -> None:
    """librdkafka resends in-flight records as new ones (a new epoch: new sequence numbers),
    which no broker can deduplicate: reported apart, the order judged on the first copies. Two
    copies under one producer id, epoch and sequence are the broker's failure, and so is a copy
    whose writer is unknown."""
    reads = read_back((0, rec("a", 0, 0)), (0, rec("a", 0, 1)), (0, rec("a", 0, 0)), (0, rec("b", 0, 0)))
    reads += read_back((1, rec("b", 1, 0)), (1, rec("b", 1, 0)), (1, rec("c", 1, 0)), (1, rec("c", 1, 0)))
    assert repeated_places(places_of(reads)) == [(0, 0), (0, 2), (1, 0), (1, 1), (1, 2), (1, 3)]
    writers = {
        (0, 0): Writer(7, 0, 0),
        (0, 2): Writer(7, 1, 0),
        (1, 0): Writer(8, 0, 5),
        (1, 1): Writer(8, 0, 5),
        (1, 2): Writer(9, 0, 0),
    }
    acked = [Acked(rec("a", 0, 0), 0), Acked(rec("a", 0, 1), 1)]
    report = check(acked, reads, writers)
    assert report.resent == {rec("a", 0, 0): [(0, 0), (0, 2)]}
    assert report.duplicated == {rec("b", 1, 0): [(1, 0), (1, 1)], rec("c", 1, 0): [(1, 2), (1, 3)]}
    assert not report.reordered
    assert "1 resent as new records" in str(report)
    assert "(1, 3) by an unknown writer" in str(report)
    assert not report.ok
    assert check(acked, reads[:4], writers).ok
    assert not check(acked, reads[:4]).ok, "without writers a copy counts as duplicated"


def test_replicas_holding_the_same_batches_in_rising_epochs_pass() -> None:
    """A follower behind the leader is compared on what both hold."""
    leader = [Batch(0, 0, 4, 0, 11), Batch(0, 5, 5, 0, 12), Batch(0, 6, 9, 2, 13), Batch(1, 0, 0, 1, 14)]
    report = check([], [], replicas={1: leader, 2: leader[:2], 3: list(reversed(leader))})
    assert report.ok, str(report)
    assert report.batches == 10


def test_an_older_epoch_after_a_newer_one_and_a_batch_without_epoch_are_regressions() -> None:
    """A deposed leader's write kept after its successor's, or a batch no leader stamped."""
    log = [Batch(0, 0, 0, 3, 1), Batch(0, 1, 1, 2, 2), Batch(1, 0, 0, -1, 3)]
    report = check([], [], replicas={1: log})
    assert report.epoch_regressions == [(1, log[0], log[1]), (1, None, log[2])]
    assert not report.ok
    assert "2 epoch regressions" in str(report)


def test_replicas_holding_other_batches_at_one_offset_diverged() -> None:
    """Two leaders that wrote different records at offset 1 in one epoch: the CRCs differ."""
    ours, theirs = Batch(0, 1, 1, 4, 99), Batch(0, 1, 1, 4, 77)
    report = check([], [], replicas={1: [Batch(0, 0, 0, 4, 5), ours], 2: [Batch(0, 0, 0, 4, 5), theirs]})
    assert report.diverged == [(1, 2, ours, theirs), (2, 1, theirs, ours)]
    split = check(
        [], [], replicas={1: [Batch(0, 0, 1, 4, 5)], 2: [Batch(0, 0, 0, 4, 5), Batch(0, 1, 1, 4, 6)]}
    )
    assert [(node, other) for node, other, _, _ in split.diverged] == [(1, 2), (2, 1), (2, 1)]
    assert not report.ok and not split.ok


def test_acknowledged_records_the_group_was_not_given_are_unconsumed() -> None:
    reads = read_back((0, rec("a", 0, 0)), (0, rec("a", 0, 1)))
    acked = [Acked(rec("a", 0, 0), 0), Acked(rec("a", 0, 1), 1)]
    assert check(acked, reads, consumed={(0, 0), (0, 1), (1, 0)}).ok
    report = check(acked, reads, consumed={(0, 0)})
    assert report.unconsumed == [Acked(rec("a", 0, 1), 1)]
    assert not report.ok
