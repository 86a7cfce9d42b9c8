"""A segment finds a batch from its latest appends' positions exactly as a walk from the start
would (``log.recent_appends``), whatever appends, gaps and truncations came before."""

from __future__ import annotations

import os
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from log import LogConfig
from log.recent_appends import MAX_NOTED, RecentAppends
from log.segment import Segment
from wire.record_batch import BatchInfo, Record, encode_batch

CONFIG = LogConfig(index_interval_bytes=256)
BASE_TS = 1_700_000_000_000


def test_a_run_tells_where_each_offset_after_its_first_append_starts() -> None:
    recent = RecentAppends()
    recent.note(last_offset=4, position=0, end=100)
    recent.note(last_offset=9, position=100, end=180)
    recent.note(last_offset=10, position=180, end=250)
    assert recent.walk_start(3) is None  # the run does not say what comes before its first append
    assert recent.walk_start(4) is None
    assert recent.walk_start(5) == 100
    assert recent.walk_start(9) == 100
    assert recent.walk_start(10) == 180
    assert recent.walk_start(11) == 250  # past every batch: the walk starts at the end


def test_a_run_starts_again_when_appends_stop_being_contiguous_or_too_many() -> None:
    recent = RecentAppends()
    recent.note(last_offset=4, position=0, end=100)
    recent.note(last_offset=9, position=100, end=180)
    recent.note(last_offset=20, position=150, end=200)  # a cut went through the last append
    assert recent.walk_start(10) is None and recent.walk_start(21) == 200
    for n in range(MAX_NOTED + 1):
        recent.note(last_offset=100 + n, position=200 + n, end=201 + n)
    assert recent.walk_start(101) is None  # dropped with the full run
    assert recent.walk_start(100 + MAX_NOTED) == 200 + MAX_NOTED


def _first_batch_from_start(segment: Segment, offset: int) -> BatchInfo | None:
    return next((batch for batch in segment.walk(0) if batch.last_offset >= offset), None)


operations = st.lists(
    st.one_of(
        # an append of `batches` batches of `records` records, `gap` offsets after the end
        st.tuples(st.just("append"), st.integers(1, 3), st.integers(1, 4), st.integers(0, 3)),
        st.tuples(st.just("truncate"), st.integers(0, 200), st.just(0), st.just(0)),
        st.tuples(st.just("reopen"), st.just(0), st.just(0), st.just(0)),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(operations)
def test_finding_a_batch_agrees_with_a_walk_from_the_start(ops: list[tuple[str, int, int, int]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        segment = Segment.create(directory, 0, CONFIG, BASE_TS)
        try:
            for kind, a, b, c in ops:
                if kind == "append":
                    data, offset = bytearray(), segment.next_offset + c
                    for _ in range(a):
                        records = [Record(offset + i, BASE_TS, None, b"v" * 40) for i in range(b)]
                        data += encode_batch(records, base_offset=offset)
                        offset += b
                    segment.append(memoryview(bytes(data)), offset - 1, BASE_TS, offset - 1, 256)
                elif kind == "truncate" and segment.next_offset:
                    segment.truncate_to(a % segment.next_offset)
                elif kind == "reopen":
                    segment.close()
                    segment = Segment(directory, 0, CONFIG, BASE_TS)
                    segment.load(256)
                for offset in range(segment.next_offset + 2):
                    assert segment.find_batch(offset) == _first_batch_from_start(segment, offset), offset
        finally:
            segment.close()
    assert not os.path.exists(directory)
