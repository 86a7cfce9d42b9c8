"""Power cuts at random points: every acknowledged record survives, and recovery stays sound.

The log engine reports every sync and rename to ``log.sync_ledger``; a power cut turns the data
directory into what the disk would hold (each file cut to the length its last completed sync
covered, renames no directory sync covered undone, maybe garbage where unsynced pages were),
and the log is reopened through the real recovery path.  "Acknowledged" is what
``broker.services.storage.durability`` acknowledges under ``flush.messages``: an append followed by a
``sync_data`` (or a full ``flush``) that started after it.  ``kill -9`` cannot test this: the
page cache survives a process.

``ODRADEK_POWER_CUT_EXAMPLES`` sets the number of examples (default 1000: about 2,000 power cuts in
~20 s; e.g. 20000 for a long run).
"""

from __future__ import annotations

import dataclasses
import os

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from log import LogConfig, PartitionLog, sync_ledger
from log.checkpoint import write_atomically
from tests.log.conftest import BASE_TS, append, crash
from tests.log.log_machine import OnDiskLogMachine
from wire.record_batch import Record, decode_records, encode_batch, scan_batches

CONFIG = LogConfig(segment_bytes=2048, index_interval_bytes=100, segment_index_bytes=8 * 6)
EXAMPLES = int(os.environ.get("ODRADEK_POWER_CUT_EXAMPLES", "1000"))


def stored(log: PartitionLog) -> list[tuple[int, list[bytes | None]]]:
    """Every batch from the log start: (first offset, values), read as a consumer would.

    A power cut may leave the log end past the last batch (a rolled segment whose
    predecessor's unsynced tail was lost): those offsets were never acknowledged and hold
    nothing; the next append fills from the log end on.
    """
    found = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data:
            break
        for batch in scan_batches(data, from_client=False):  # checks every CRC
            found.append((batch.base_offset, [r.value for r in decode_records(data, batch)]))
            offset = batch.next_offset
    return found


class PowerCutModel(OnDiskLogMachine):
    """The model: every batch appended (first offset, values) and how far acknowledgements go."""

    config = CONFIG
    prefix = "odradek-power-cut-"

    def __init__(self) -> None:
        self._recording = sync_ledger.recording()
        self.ledger = self._recording.__enter__()  # before the log is created: its files count
        super().__init__()
        self.batches: list[tuple[int, list[bytes | None]]] = []
        self.end = 0
        self.acknowledged = 0  # offsets below this were acknowledged
        self.appends = 0

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            self._recording.__exit__(None, None, None)

    @rule(count=st.integers(1, 4), size=st.integers(0, 600))
    def append(self, count: int, size: int) -> None:
        self.appends += 1
        values: list[bytes | None] = [(b"%d.%d:" % (self.appends, i)).ljust(size, b"v") for i in range(count)]
        records = [Record(i, BASE_TS, b"k%d" % i, value) for i, value in enumerate(values)]
        info = append(self.log, encode_batch(records))
        assert info.first_offset == self.end
        self.batches.append((self.end, values))
        self.end += count

    @rule()
    def sync_data(self) -> None:
        """The acknowledgement path of ``flush.messages``: data only, indexes left behind."""
        self.log.sync_data()
        self.acknowledged = self.end

    @rule()
    def flush(self) -> None:
        self.log.flush()
        self.acknowledged = self.end

    @rule()
    def checkpoint(self) -> None:
        self.log.checkpoint()

    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        self.log.delete_records(data.draw(st.integers(self.log.log_start_offset, self.end)))

    @rule(retention_bytes=st.integers(0, 6000))
    def retention_by_size(self, retention_bytes: int) -> None:
        self.log.config = dataclasses.replace(CONFIG, retention_bytes=retention_bytes, file_delete_delay_ms=0)
        self.log.delete_old_segments(BASE_TS)
        self.log.config = CONFIG

    @precondition(lambda self: any(first >= self.log.log_start_offset for first, _ in self.batches))
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        """A follower cutting a divergent tail: the cut batches never come back, and what is
        left was fsynced before ``truncate_to`` returned."""
        first = data.draw(st.sampled_from([f for f, _ in self.batches if f >= self.log.log_start_offset]))
        self.log.truncate_to(first)
        self.batches = [(f, values) for f, values in self.batches if f < first]
        self.end = self.acknowledged = self.log.log_end_offset
        assert self.end == first

    @rule()
    def restart_clean(self) -> None:
        self.log.close()  # a clean shutdown syncs everything
        self.acknowledged = self.end
        self.reopen()

    @precondition(lambda self: self.end > 0)
    @rule(garbage=st.binary(max_size=80))
    def power_cut(self, garbage: bytes) -> None:
        crash(self.log)
        for _, segment in self.log._deleted:
            segment.close()
        sync_ledger.pull_the_plug(self.root, self.ledger)
        if garbage:  # unsynced pages that happened to reach the disk, or torn ones
            active = max((n for n in os.listdir(self.directory) if n.endswith(".log")), default=None)
            if active is not None:
                with open(os.path.join(self.directory, active), "ab") as file:
                    file.write(garbage)
        self.reopen()
        self.check_recovered()

    def check_recovered(self) -> None:
        log = self.log
        start, end = log.log_start_offset, log.log_end_offset
        assert end >= self.acknowledged or start >= self.acknowledged, (
            f"acknowledged up to {self.acknowledged}, recovered [{start}, {end})"
        )
        survivors = stored(log)
        written = dict(self.batches)
        for first, values in survivors:
            assert written.get(first) == values, f"the batch at {first} is not the one written there"
        acknowledged = [
            (first, values)
            for first, values in self.batches
            if start < first + len(values) <= self.acknowledged
        ]
        assert [batch for batch in acknowledged if batch not in survivors] == [], "acknowledged batches lost"
        self.batches = survivors
        self.end = end
        self.acknowledged = end  # recovery synced what it kept
        log.close()  # a second recovery from the same files changes nothing
        self.reopen()
        assert (self.log.log_start_offset, self.log.log_end_offset) == (start, end)
        assert stored(self.log) == survivors


TestPowerCut = PowerCutModel.TestCase
# CPU-bound (~45 s of CPU): its deadline is for a hang, and on a loaded machine (CI runs the
# suites side by side) it gets a fraction of a core.
TestPowerCut.pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
TestPowerCut.settings = settings(max_examples=EXAMPLES, stateful_step_count=40, deadline=None)


def test_a_replacement_no_directory_sync_covered_is_undone(tmp_path) -> None:
    path = os.fspath(tmp_path / "state")
    with sync_ledger.recording() as ledger:
        write_atomically(path, b"old")
        write_atomically(path, b"new", durable=False)
        sync_ledger.pull_the_plug(os.fspath(tmp_path), ledger)
    assert sorted(os.listdir(tmp_path)) == ["state", "state.tmp"]
    assert (tmp_path / "state").read_bytes() == b"old"
    assert (tmp_path / "state.tmp").read_bytes() == b"", "never synced: nothing of it reached the disk"


def test_a_durable_replacement_survives(tmp_path) -> None:
    path = os.fspath(tmp_path / "state")
    with sync_ledger.recording() as ledger:
        write_atomically(path, b"old")
        write_atomically(path, b"new")
        sync_ledger.pull_the_plug(os.fspath(tmp_path), ledger)
    assert os.listdir(tmp_path) == ["state"]
    assert (tmp_path / "state").read_bytes() == b"new"


def test_a_segment_a_power_cut_brings_back_below_the_log_start_is_not_recovered() -> None:
    """Found by the model: DeleteRecords renames the segments below the new log start
    ``.deleted``; a power cut before any directory sync brings one back, torn, and recovering
    it used to cut off every later segment, acknowledged batches included."""
    model = PowerCutModel()
    try:
        for count, size in ((3, 116), (1, 0), (4, 0), (4, 10), (4, 143)):
            model.append(count, size)
        model.restart_clean()
        model.power_cut(b"")
        for count, size in ((1, 0), (3, 146), (4, 353)):
            model.append(count, size)
        model.log.delete_records(20)
        model.flush()
        model.power_cut(b"")  # checks that every acknowledged batch survived
    finally:
        model.teardown()
