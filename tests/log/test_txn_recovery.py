"""Transaction state across restarts, recovery and segment deletion: snapshots keep open
transactions, recovery rebuilds the aborted-transaction indexes it drops, and a segment's
``.txnindex`` goes wherever the segment goes."""

from __future__ import annotations

import dataclasses
import os
import struct

import pytest
from crc32c import crc32c

from log import PartitionLog
from log.segment import Segment
from tests.log.conftest import BASE_TS, crash
from tests.log.test_transactions import CONFIG, Model, check_against, entry, interleave, send, txnindex_files


def snapshots(log_dir: str) -> list[str]:
    return sorted(n for n in os.listdir(log_dir) if n.endswith(".snapshot"))


def test_clean_restart_keeps_open_transactions_and_indexes(log_dir: str, monkeypatch) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    model = Model()
    interleave(log, model, steps=120, seed=5)
    assert model.open, "the scenario leaves transactions open"
    indexes = txnindex_files(log_dir)
    log.close()

    def no_recovery(self, interval):
        raise AssertionError("a clean shutdown must not trigger recovery")

    monkeypatch.setattr(Segment, "recover", no_recovery)
    log = PartitionLog.open(log_dir, CONFIG)
    assert txnindex_files(log_dir) == indexes
    check_against(log, model)
    pid, first = next(iter(model.open.items()))
    log.append_marker(pid, 0, False, 0, BASE_TS)
    assert (pid, first) in log.aborted_transactions(first, log.log_end_offset)


@pytest.mark.parametrize("flushed_steps", [0, 60], ids=["recover everything", "recover from the middle"])
def test_unclean_restart_rebuilds_the_indexes_it_drops(log_dir: str, flushed_steps: int) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    model = Model()
    interleave(log, model, steps=flushed_steps, seed=9)
    log.flush()
    log.checkpoint()  # the segments before the one holding the recovery point are trusted
    recover_from = max(b for b in log.segment_base_offsets if b <= log.recovery_point)
    interleave(log, model, steps=140, seed=10)
    assert len(snapshots(log_dir)) == 2, "rolls wrote snapshots newer than the recovery point"
    indexes = txnindex_files(log_dir)
    unsynced = [name for name in indexes if int(name[:20]) >= recover_from]
    assert unsynced, "the scenario aborts past the recovery point"
    crash(log)
    for name in unsynced:  # what a power cut could leave of files never fsynced
        os.truncate(os.path.join(log_dir, name), 0)
    log = PartitionLog.open(log_dir, CONFIG)
    assert txnindex_files(log_dir) == indexes
    check_against(log, model)


def test_unclean_restart_without_damage_gives_the_same_state(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    model = Model()
    interleave(log, model, steps=150, seed=21)
    indexes = txnindex_files(log_dir)
    crash(log)
    log = PartitionLog.open(log_dir, CONFIG)
    assert txnindex_files(log_dir) == indexes
    check_against(log, model)


def test_a_torn_marker_reopens_its_transaction(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 11, 0)
    send(log, 12, 0)
    log.append_marker(12, 0, True, 0, BASE_TS)
    marker = log.append_marker(11, 0, False, 0, BASE_TS).first_offset
    assert log.aborted_transactions(0, marker) == [(11, 0)]
    active = os.path.join(log_dir, f"{log.segment_base_offsets[-1]:020d}.log")
    crash(log)
    os.truncate(active, os.path.getsize(active) - 10)  # the abort marker is torn
    log = PartitionLog.open(log_dir, CONFIG)
    assert log.log_end_offset == marker
    assert log.aborted_transactions(0, marker) == [] and txnindex_files(log_dir) == {}
    assert log.last_stable_offset == 0 and entry(log, 11).current_txn_first_offset == 0
    log.append_marker(11, 0, False, 0, BASE_TS)
    assert log.aborted_transactions(0, log.log_end_offset) == [(11, 0)]


def version_1_snapshot(pid: int, epoch: int, last_seq: int, last_offset: int) -> bytes:
    """A snapshot as written before transactions (documented in ``log.producer_state``)."""
    body = struct.pack(">qhqb", pid, epoch, BASE_TS, 1)
    body += struct.pack(">iiqqq", 0, last_seq, 0, last_offset, BASE_TS)
    count = struct.pack(">i", 1)
    return struct.pack(">4shIi", b"ODPS", 1, crc32c(count + body), 1) + body


def test_version_1_snapshots_are_still_read(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    send(log, 11, 0, count=3, transactional=False)
    log.close()
    [name] = snapshots(log_dir)
    with open(os.path.join(log_dir, name), "wb") as file:
        file.write(version_1_snapshot(11, 0, 2, 2))
    log = PartitionLog.open(log_dir, CONFIG)
    producer = entry(log, 11)
    assert (producer.current_txn_first_offset, producer.coordinator_epoch) == (-1, -1)
    assert send(log, 11, 0, count=3, transactional=False).duplicate, "its batches came from the file"
    assert send(log, 11, 3).first_offset == 3


def test_segment_deletion_takes_its_txnindex(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, CONFIG)
    model = Model()
    interleave(log, model, steps=120, seed=8)
    for pid in list(model.open):
        log.append_marker(pid, 0, False, 0, BASE_TS)
    before = txnindex_files(log_dir)
    cut = log.segment_base_offsets[len(log.segment_base_offsets) // 2]
    log.delete_records(cut)
    kept = {n for n in before if int(n[:20]) >= cut}
    assert set(txnindex_files(log_dir)) == kept and len(kept) < len(before)
    log.close()
    log = PartitionLog.open(log_dir, CONFIG)
    assert set(txnindex_files(log_dir)) == kept
    log.close()
    log = PartitionLog.open(log_dir, dataclasses.replace(CONFIG, retention_bytes=0))
    assert log.delete_old_segments(BASE_TS) > 0
    assert txnindex_files(log_dir) == {}
