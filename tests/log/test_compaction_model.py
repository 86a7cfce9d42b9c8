"""Random keyed appends, clock steps, cleaning passes, restarts and crashes of a compacted log.

The model is every record ever appended.  Whatever the cleaner does, a reader must see a
subsequence of it (same offsets, same keys and values), every key's latest value, and after
a pass no key twice in the cleaned range.
"""

from __future__ import annotations

import dataclasses

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from log.cleaner import CleaningJob, cleanable_range
from tests.log.conftest import BASE_TS, crash
from tests.log.log_machine import OnDiskLogMachine
from tests.log.test_cleaner import COMPACT, put, stored

CONFIG = dataclasses.replace(COMPACT, segment_bytes=250, index_interval_bytes=100)
KEYS = [b"k%d" % i for i in range(5)]
# Values of 30+ bytes make a segment hold one to three batches, so most steps roll.
VALUES = st.one_of(st.none(), st.binary(min_size=30, max_size=120), st.binary(min_size=30, max_size=40))
records_strategy = st.lists(st.tuples(st.sampled_from(KEYS), VALUES), min_size=1, max_size=3)


class CompactedLogModel(OnDiskLogMachine):
    config = CONFIG
    prefix = "odradek-compaction-model-"

    def __init__(self) -> None:
        super().__init__()
        self.appended: dict[int, tuple[bytes, bytes | None]] = {}
        self.now = BASE_TS

    @rule(items=records_strategy)
    def append(self, items: list[tuple[bytes, bytes | None]]) -> None:
        first = put(self.log, items, timestamp=self.now)
        for i, item in enumerate(items):
            self.appended[first + i] = item

    @rule(step=st.integers(0, 2000))
    def time_passes(self, step: int) -> None:
        self.now += step

    @precondition(lambda self: len(self.log.segment_base_offsets) > 1)
    @rule(max_map_keys=st.integers(1, 6))
    def clean(self, max_map_keys: int) -> None:
        assert self.log.begin_cleaning()
        job = CleaningJob(self.log, cleanable_range(self.log, self.now), self.now, max_map_keys)
        job.run()
        cleaned_keys = [key for offset, key, _ in stored(self.log) if offset < job.end_offset]
        assert len(cleaned_keys) == len(set(cleaned_keys)), "a key twice in the cleaned range"
        assert job.end_offset <= self.log.segment_base_offsets[-1], "the active segment is never cleaned"

    @rule()
    def restart(self) -> None:
        self.log.close()
        self.reopen()

    @rule()
    def crash_and_recover(self) -> None:
        self.log.flush()  # no torn tail here: the plain model covers those
        crash(self.log)
        self.reopen()

    @invariant()
    def readers_see_a_compacted_subsequence(self) -> None:
        seen = stored(self.log)
        offsets = [offset for offset, _, _ in seen]
        assert offsets == sorted(set(offsets))
        assert all(self.appended[offset] == (key, value) for offset, key, value in seen)
        latest: dict[bytes, tuple[int, bytes | None]] = {}
        for offset, (key, value) in self.appended.items():
            latest[key] = (offset, value)
        present = set(offsets)
        for offset, value in latest.values():
            assert value is None or offset in present, "a key's latest value was lost"
        assert self.log.log_end_offset == (max(self.appended) + 1 if self.appended else 0)


TestCompactedLogModel = CompactedLogModel.TestCase
TestCompactedLogModel.settings = settings(max_examples=30, stateful_step_count=30, deadline=None)
