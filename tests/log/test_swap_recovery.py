"""A crash at any point of a segment swap leaves the old segments or the new one, never a mix."""

from __future__ import annotations

import dataclasses
import os

import pytest

from log import KafkaStorageError, PartitionLog
from log.cleaner import MAX_MAP_KEYS, CleaningJob, cleanable_range
from tests.log.conftest import BASE_TS, crash
from tests.log.test_cleaner import COMPACT, put, stored

# One cleaning group: segments roll by time (one batch each) but all fit segment.bytes.
CONFIG = dataclasses.replace(COMPACT, segment_bytes=100_000, segment_ms=10, file_delete_delay_ms=60_000)
SWAP_RENAMES = 3 + 3 * 4 + 3  # cleaned -> swap, four old segments -> deleted, swap -> live


def dirty_log(log_dir: str) -> PartitionLog:
    log = PartitionLog.open(log_dir, CONFIG)
    for n in range(5):
        put(log, [(b"k", b"v%d" % n), (b"j%d" % n, b"w")], timestamp=BASE_TS + 100 * n)
    assert len(log.segment_base_offsets) == 5
    return log


def compacted_records(log_dir: str) -> list:
    """What the log holds after a pass that completes."""
    log = dirty_log(log_dir)
    assert log.begin_cleaning()
    CleaningJob(log, cleanable_range(log, BASE_TS), BASE_TS, MAX_MAP_KEYS).run()
    records = stored(log)
    log.delete()
    return records


@pytest.mark.parametrize("renames_before_crash", range(SWAP_RENAMES))
def test_crash_during_a_swap(log_dir: str, monkeypatch, renames_before_crash: int) -> None:
    new = compacted_records(log_dir)
    log = dirty_log(log_dir)
    old = stored(log)
    assert new != old
    real_rename = os.rename
    calls = []

    def rename_then_crash(source: str, target: str) -> None:
        if len(calls) == renames_before_crash:
            raise OSError(5, "simulated crash")
        calls.append(target)
        real_rename(source, target)

    monkeypatch.setattr("log.segment.replace", rename_then_crash)  # the segments' renames only
    assert log.begin_cleaning()
    job = CleaningJob(log, cleanable_range(log, BASE_TS), BASE_TS, MAX_MAP_KEYS)
    with pytest.raises(KafkaStorageError):
        job.run()
    monkeypatch.undo()
    crash(log)
    for _, segment in log._deleted:
        segment.close()
    leftovers = [n for n in os.listdir(log_dir) if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert leftovers, "the crash left files of the swap behind"
    recovered = PartitionLog.open(log_dir, CONFIG)
    expected = old if not any(".swap" in target for target in calls) else new
    assert stored(recovered) == expected, f"files at the crash: {sorted(leftovers)}"
    assert not [n for n in os.listdir(log_dir) if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert put(recovered, [(b"k", b"after")]) == old[-1][0] + 1


def test_leftover_cleaned_files_are_discarded(log_dir: str) -> None:
    log = dirty_log(log_dir)
    old = stored(log)
    assert log.begin_cleaning()
    job = CleaningJob(log, cleanable_range(log, BASE_TS), BASE_TS, MAX_MAP_KEYS)
    job.build_offset_map()
    job.clean_group(job.groups[0])  # written, fsynced, never swapped
    crash(log)
    assert "00000000000000000000.log.cleaned" in os.listdir(log_dir)
    recovered = PartitionLog.open(log_dir, CONFIG)
    assert stored(recovered) == old
    assert not [n for n in os.listdir(log_dir) if ".cleaned" in n]
