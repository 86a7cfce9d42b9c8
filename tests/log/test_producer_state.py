"""Idempotent producers: duplicates, sequence gaps, epochs, and state across restarts."""

from __future__ import annotations

import os

import pytest

from log import InvalidProducerEpochError, LogConfig, OutOfOrderSequenceError, PartitionLog
from log.producer_state import PlacedBatch, ProducerStateManager
from tests.log.conftest import append, crash, produced_batch
from wire.error_codes import ErrorCode
from wire.record_batch import scan_batches

PID = 1000
CONFIG = LogConfig(segment_bytes=4096)


def send(log: PartitionLog, seq: int, count: int = 2, epoch: int = 0, pid: int = PID):
    return append(log, produced_batch(count=count, producer_id=pid, producer_epoch=epoch, base_sequence=seq))


def test_in_sequence_batches_append(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    assert [send(log, seq).first_offset for seq in (0, 2, 4)] == [0, 2, 4]


def test_retry_of_one_of_the_last_five_returns_original_offsets(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    original = [send(log, seq) for seq in range(0, 12, 2)]  # six batches
    end = log.log_end_offset
    for first in original[1:]:
        retry = send(log, first.first_offset)  # seq == offset here
        assert retry.duplicate
        assert (retry.first_offset, retry.last_offset) == (first.first_offset, first.last_offset)
    assert log.log_end_offset == end, "a duplicate writes nothing"
    with pytest.raises(OutOfOrderSequenceError):
        send(log, 0)  # the oldest batch is no longer retained


def test_sequence_gap_is_out_of_order(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 0)
    with pytest.raises(OutOfOrderSequenceError) as info:
        send(log, 5)
    assert info.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    with pytest.raises(OutOfOrderSequenceError):
        send(log, 1, count=2)  # overlaps but is not an exact retry
    assert log.log_end_offset == 2


def test_epochs(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 0, epoch=3)
    with pytest.raises(InvalidProducerEpochError) as info:
        send(log, 2, epoch=2)
    assert info.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(OutOfOrderSequenceError):
        send(log, 7, epoch=4)  # a new epoch starts at 0
    send(log, 0, epoch=4)
    assert send(log, 2, epoch=4).first_offset == 4


def test_unknown_producer_accepts_any_sequence(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    assert send(log, 4242, epoch=7).first_offset == 0
    assert send(log, 4244, epoch=7).first_offset == 2


def test_sequence_wraps_at_int32_max(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 2**31 - 2, count=2)  # last sequence is int32 max
    assert send(log, 0, count=2).first_offset == 2
    last = send(log, 2**31 - 1, count=3, pid=PID + 1)  # wraps inside the batch: last seq 1
    assert send(log, 2, pid=PID + 1).first_offset == last.last_offset + 1


def test_non_idempotent_batches_are_not_tracked(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    append(log, produced_batch())
    append(log, produced_batch())
    assert log.log_end_offset == 2


def test_state_survives_clean_restart(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    firsts = [send(log, seq) for seq in range(0, 10, 2)]
    log.close()
    assert any(n.endswith(".snapshot") for n in os.listdir(log_dir))
    log = PartitionLog.open(log_dir, CONFIG)
    retry = send(log, 0)
    assert retry.duplicate and retry.first_offset == firsts[0].first_offset
    with pytest.raises(OutOfOrderSequenceError):
        send(log, 12)
    assert send(log, 10).first_offset == 10


def test_state_is_rebuilt_from_the_log_after_a_crash(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    for seq in range(0, 200, 2):  # rolls several segments, snapshots on each roll
        send(log, seq, epoch=1)
    crash(log)
    for name in os.listdir(log_dir):
        if name.endswith(".snapshot"):
            os.unlink(os.path.join(log_dir, name))
    log = PartitionLog.open(log_dir, CONFIG)
    assert send(log, 198, epoch=1).duplicate
    with pytest.raises(InvalidProducerEpochError):
        send(log, 200, epoch=0)
    assert send(log, 200, epoch=1).first_offset == 200


def test_damaged_snapshot_falls_back_to_an_older_one_or_the_log(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    for seq in range(0, 100, 2):
        send(log, seq)
    log.close()
    snapshots = sorted(n for n in os.listdir(log_dir) if n.endswith(".snapshot"))
    with open(os.path.join(log_dir, snapshots[-1]), "r+b") as f:
        f.seek(20)
        f.write(b"\xff\xff")
    log = PartitionLog.open(log_dir, CONFIG)
    assert send(log, 98).duplicate
    assert send(log, 100).first_offset == 100


def test_snapshot_round_trip_and_rejects_damage() -> None:
    state = ProducerStateManager()
    batches = [produced_batch(count=1, producer_id=p, producer_epoch=1, base_sequence=0) for p in (1, 2)]
    for offset, batch in enumerate(batches):
        [info] = scan_batches(batch)
        state.replay(PlacedBatch(info, offset, offset, 5))
    data = state.to_snapshot()
    restored = ProducerStateManager.from_snapshot(data)
    assert restored.entries == state.entries
    for damaged in (data[:-1], data[:5], b"XXXX" + data[4:], data[:-3] + b"\x00\x00\x01"):
        with pytest.raises(ValueError):
            ProducerStateManager.from_snapshot(damaged)


def test_expired_producers_are_forgotten(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 0)
    log.remove_expired_producers(now_ms=2**62, expiration_ms=1000)
    assert send(log, 77).first_offset == 2, "forgotten producers are treated as unknown"
