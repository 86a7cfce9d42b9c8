"""append_as_follower: batches keep the offsets, epochs and timestamps their leader gave them,
and producer state follows, so a follower can take over as leader."""

from __future__ import annotations

import os

import pytest

from log import LogConfig, PartitionLog, UnexpectedAppendOffsetError
from tests.log.conftest import BASE_TS, append, produced_batch, replicate
from wire.record_batch import Record, encode_batch, scan_batches

CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=200, file_delete_delay_ms=0)


def leader_and_follower(tmp_path, config: LogConfig = CONFIG) -> tuple[PartitionLog, PartitionLog]:
    return (
        PartitionLog.open(os.fspath(tmp_path / "leader" / "t-0"), config),
        PartitionLog.open(os.fspath(tmp_path / "follower" / "t-0"), config),
    )


def whole_log(log: PartitionLog) -> bytes:
    """Every stored byte from the log start, read the way a follower fetches."""
    out, offset = b"", log.log_start_offset
    while offset < log.log_end_offset:
        data = b"".join(
            os.pread(s.fd, s.length, s.position)
            for s in log.read_slices(offset, 1 << 20, upto=log.log_end_offset)
        )
        out += data
        offset = scan_batches(data, from_client=False)[-1].next_offset
    return out


def idempotent(seq: int, count: int = 2, pid: int = 7, transactional: bool = False) -> bytearray:
    return produced_batch(
        count=count,
        value_size=50,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        transactional=transactional,
    )


def test_follower_holds_the_leaders_bytes_offsets_and_epochs(tmp_path) -> None:
    leader, follower = leader_and_follower(tmp_path)
    seq = 0
    for epoch in (0, 0, 3, 3, 8):
        for _ in range(6):
            append(leader, idempotent(seq), leader_epoch=epoch)
            seq += 2
        leader.append_marker(9, 0, commit=False, coordinator_epoch=0, now_ms=BASE_TS, leader_epoch=epoch)
    assert replicate(leader, follower) > 1
    assert len(follower.segment_base_offsets) > 1
    assert whole_log(follower) == whole_log(leader)
    assert follower.leader_epochs.epoch_entries() == leader.leader_epochs.epoch_entries()
    assert [e.epoch for e in follower.leader_epochs.epoch_entries()] == [0, 3, 8]
    follower.close()
    follower = PartitionLog.open(os.fspath(tmp_path / "follower" / "t-0"), CONFIG)
    assert whole_log(follower) == whole_log(leader)
    assert follower.leader_epochs.epoch_entries() == leader.leader_epochs.epoch_entries()


def test_a_follower_that_takes_over_detects_the_producers_retries(tmp_path) -> None:
    leader, follower = leader_and_follower(tmp_path)
    infos = [append(leader, idempotent(seq)) for seq in range(0, 10, 2)]
    replicate(leader, follower)
    assert [(e.producer_id, e.epoch, e.last_seq) for e in follower.active_producers()] == [(7, 0, 9)]
    # The follower becomes leader (epoch 1); the producer retries its last batch.
    retry = append(follower, idempotent(8), leader_epoch=1)
    assert retry.duplicate and (retry.first_offset, retry.last_offset) == (
        infos[-1].first_offset,
        infos[-1].last_offset,
    )
    assert append(follower, idempotent(10), leader_epoch=1).first_offset == 10
    follower.close()
    follower = PartitionLog.open(os.fspath(tmp_path / "follower" / "t-0"), CONFIG)
    assert append(follower, idempotent(10), leader_epoch=1).duplicate


def test_replicated_transactions_keep_their_aborts_and_open_state(tmp_path) -> None:
    leader, follower = leader_and_follower(tmp_path)
    append(leader, idempotent(0, pid=5, transactional=True))
    leader.append_marker(5, 0, commit=False, coordinator_epoch=2, now_ms=BASE_TS)
    append(leader, idempotent(2, pid=5, transactional=True))
    append(leader, produced_batch())
    replicate(leader, follower)
    assert follower.aborted_transactions(0, follower.log_end_offset) == [(5, 0)]
    assert follower.last_stable_offset == leader.last_stable_offset == 3
    open_txn = [
        (e.producer_id, e.current_txn_first_offset, e.coordinator_epoch) for e in follower.active_producers()
    ]
    assert open_txn == [(5, 3, 2)]


def test_an_append_below_the_log_end_is_refused(tmp_path) -> None:
    leader, follower = leader_and_follower(tmp_path)
    for _ in range(3):
        append(leader, produced_batch(count=2))
    replicate(leader, follower)
    data = bytearray(leader.read(2, 1 << 20))
    view = memoryview(data)
    with pytest.raises(UnexpectedAppendOffsetError, match="starts at offset 2, expected 6"):
        follower.append_as_follower(view, scan_batches(view, from_client=False))
    twice = memoryview(bytearray(leader.read(4, 1 << 20)) * 2)  # the same batch twice: out of order
    append(leader, produced_batch())
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(twice, scan_batches(twice, from_client=False))
    assert follower.log_end_offset == 6


def test_gaps_are_kept_as_in_compacted_topics(tmp_path) -> None:
    _, follower = leader_and_follower(tmp_path)
    batches = bytearray()
    for base in (0, 10, 11, 500):
        records = [Record(base, BASE_TS, b"k", b"v")]
        batches += encode_batch(records, base_offset=base, partition_leader_epoch=4)
    view = memoryview(batches)
    info = follower.append_as_follower(view, scan_batches(view, from_client=False))
    assert (info.first_offset, info.last_offset) == (0, 500)
    assert follower.log_end_offset == 501
    follower.close()
    follower = PartitionLog.open(os.fspath(tmp_path / "follower" / "t-0"), CONFIG)
    assert follower.log_end_offset == 501
    stored = scan_batches(follower.read(11, 1 << 20), from_client=False)
    assert [b.base_offset for b in stored] == [11, 500]
    assert follower.leader_epochs.epoch_entries() == [(4, 0)]


def test_a_gap_past_relative_offsets_starts_a_segment_at_the_batch(tmp_path) -> None:
    _, follower = leader_and_follower(tmp_path)
    far = 3_000_000_000  # beyond a 32-bit offset relative to the empty segment at 0
    view = memoryview(encode_batch([Record(far, BASE_TS, b"k", b"v")], base_offset=far))
    follower.append_as_follower(view, scan_batches(view, from_client=False))
    assert follower.segment_base_offsets == (0, far)
    follower.close()
    follower = PartitionLog.open(os.fspath(tmp_path / "follower" / "t-0"), CONFIG)
    assert follower.log_end_offset == far + 1
    assert scan_batches(follower.read(far, 1 << 20), from_client=False)[0].base_offset == far


def test_leader_settings_are_not_applied_again(tmp_path) -> None:
    leader, _ = leader_and_follower(tmp_path, LogConfig(message_timestamp_type="LogAppendTime"))
    strict = LogConfig(max_message_bytes=100, message_timestamp_type="LogAppendTime")
    follower = PartitionLog.open(os.fspath(tmp_path / "strict" / "t-0"), strict)
    append(leader, produced_batch(count=3, value_size=400), now_ms=BASE_TS + 5)
    replicate(leader, follower)
    assert whole_log(follower) == whole_log(leader)
    (stored,) = scan_batches(follower.read(0, 1 << 20), from_client=False)
    assert stored.max_timestamp == BASE_TS + 5 and stored.size > 100


def test_replicated_high_watermark_bounds_consumers_not_followers(tmp_path) -> None:
    leader, follower = leader_and_follower(tmp_path)
    for _ in range(10):
        append(leader, produced_batch(count=2, value_size=100))
    leader.set_replicated_high_watermark(8)
    assert leader.high_watermark == 8 and leader.last_stable_offset == 8
    consumed = scan_batches(leader.read(0, 1 << 20), from_client=False)
    assert consumed[-1].next_offset == 8
    assert leader.read(8, 1 << 20) == b"" and leader.read_slices(8, 1 << 20) == []
    assert leader.read_committed(0, 1 << 20).slices[-1].length == sum(b.size for b in consumed)
    replicate(leader, follower)
    assert follower.log_end_offset == 20
    leader.set_replicated_high_watermark(500)  # clamped to the log end
    assert leader.high_watermark == leader.replicated_high_watermark == 20
    leader.set_replicated_high_watermark(12)
    leader.checkpoint()
    leader.close()
    leader = PartitionLog.open(os.fspath(tmp_path / "leader" / "t-0"), CONFIG)
    assert leader.high_watermark == leader.replicated_high_watermark == 12
    leader.set_replicated_high_watermark(None)
    assert leader.high_watermark == 20


def test_the_restored_high_watermark_is_clamped_to_the_recovered_end(tmp_path) -> None:
    leader, _ = leader_and_follower(tmp_path)
    for _ in range(4):
        append(leader, produced_batch(count=2))
    leader.set_replicated_high_watermark(8)
    leader.checkpoint()
    leader.truncate_to(4)
    assert leader.high_watermark == 4
    leader.close()
    path = os.path.join(tmp_path, "leader", "t-0", "partition.checkpoint")
    with open(path) as file:
        text = file.read().replace("high_watermark 4", "high_watermark 99")
    with open(path, "w") as file:
        file.write(text)
    leader = PartitionLog.open(os.fspath(tmp_path / "leader" / "t-0"), CONFIG)
    assert leader.replicated_high_watermark == leader.log_end_offset == 4
