"""Segment rolling by time with jitter, and the broker keys that set it."""

from __future__ import annotations

import random

from log import LogConfig, PartitionLog
from tests.log.conftest import BASE_TS, append, produced_batch


def test_jitter_rolls_a_segment_early(log_dir: str, monkeypatch) -> None:
    monkeypatch.setattr(random, "randrange", lambda bound: 600 if bound == 1000 else 0)
    log = PartitionLog.open(log_dir, LogConfig(segment_ms=1000, segment_jitter_ms=5000))
    append(log, produced_batch(timestamp=BASE_TS))
    append(log, produced_batch(timestamp=BASE_TS + 400))
    assert log.segment_base_offsets == (0,), "400 ms is not more than segment.ms minus the jitter"
    append(log, produced_batch(timestamp=BASE_TS + 401))
    assert log.segment_base_offsets == (0, 2), "the jitter (capped at segment.ms) rolled it early"


def test_an_empty_segment_never_rolls_by_time(log_dir: str) -> None:
    log = PartitionLog.open(log_dir, LogConfig(segment_ms=1), clock=lambda: BASE_TS)
    append(log, produced_batch(timestamp=BASE_TS + 10_000), now_ms=BASE_TS + 10_000)
    assert log.segment_base_offsets == (0,)
