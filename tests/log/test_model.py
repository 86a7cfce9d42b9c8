"""Random appends, reads, rolls, deletions, retention, clean restarts and crashes against a model."""

from __future__ import annotations

import dataclasses
import os

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from log import LogConfig
from tests.log.conftest import BASE_TS, append, crash, produced_batch
from tests.log.log_machine import OnDiskLogMachine
from wire.record_batch import decode_records, scan_batches

CONFIG = LogConfig(segment_bytes=2048, index_interval_bytes=100, segment_index_bytes=8 * 6)


class LogModel(OnDiskLogMachine):
    """The model is the list of batches (first offset, values) a consumer should see."""

    config = CONFIG

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[tuple[int, list[bytes]]] = []
        self.start = 0
        self.end = 0

    @rule(count=st.integers(1, 5), size=st.integers(0, 700))
    def append(self, count: int, size: int) -> None:
        batch = produced_batch(count=count, value_size=size)
        values = [bytes([65 + i % 26]) * size for i in range(count)]
        info = append(self.log, batch)
        assert info.first_offset == self.end
        self.batches.append((self.end, values))
        self.end += count

    @rule(data=st.data(), max_bytes=st.integers(1, 5000))
    def read(self, data: st.DataObject, max_bytes: int) -> None:
        offset = data.draw(st.integers(self.start, self.end))
        got = self.log.read(offset, max_bytes)
        if offset == self.end:
            assert got == b""
            return
        batches = scan_batches(got, from_client=False)
        assert len(batches) == 1 or sum(b.size for b in batches) <= max_bytes
        index = next(i for i, (first, values) in enumerate(self.batches) if first + len(values) > offset)
        for batch, (first, values) in zip(batches, self.batches[index:], strict=False):
            assert batch.base_offset == first
            assert [r.value for r in decode_records(got, batch)] == values

    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        target = data.draw(st.integers(0, self.end))
        self.log.delete_records(target)
        self.start = max(self.start, target)

    @rule(retention_bytes=st.integers(0, 6000))
    def retention_by_size(self, retention_bytes: int) -> None:
        self.log.config = dataclasses.replace(CONFIG, retention_bytes=retention_bytes, file_delete_delay_ms=0)
        self.log.delete_old_segments(BASE_TS)
        self.log.config = CONFIG
        assert self.log.log_start_offset >= self.start
        self.start = self.log.log_start_offset
        sizes = [segment.size for segment in self.log.segments]
        assert len(sizes) == 1 or sum(sizes) - sizes[0] < retention_bytes, "nothing more may go"

    @rule()
    def retention_expires_everything(self) -> None:
        self.log.config = dataclasses.replace(CONFIG, retention_ms=0)
        self.log.delete_old_segments(BASE_TS + 1)
        self.log.config = CONFIG
        self.start = self.end
        assert self.log.segment_base_offsets == (self.end,)

    @rule()
    def restart_clean(self) -> None:
        self.log.close()
        self.reopen()

    @rule(cut=st.integers(0, 60))
    def crash_and_recover(self, cut: int) -> None:
        crash(self.log)
        if cut and self.batches and self.batches[-1][0] >= self.start:
            active = max(n for n in os.listdir(self.directory) if n.endswith(".log"))
            path = os.path.join(self.directory, active)
            size = os.path.getsize(path)
            if size:
                os.truncate(path, size - min(cut, size))  # tears the last batch
                first, _ = self.batches.pop()
                self.end = first
        self.reopen()
        if self.start > self.end:  # the whole log was below the (durable) log start
            self.end = self.start

    @precondition(lambda self: self.end > self.start)
    @rule()
    def first_offset_by_timestamp(self) -> None:
        assert self.log.offset_for_timestamp(0) == (self.start, BASE_TS)

    @invariant()
    def offsets_match(self) -> None:
        assert self.log.log_end_offset == self.end
        assert self.log.log_start_offset == self.start


TestLogModel = LogModel.TestCase
TestLogModel.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
