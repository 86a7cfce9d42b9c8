"""The fetch session cache (KIP-227) on its own: contexts, epochs, what an incremental answer
keeps, and Kafka's eviction order, with a clock the tests move."""

from __future__ import annotations

from typing import Any

import pytest

from broker.services.storage.fetch_sessions import EVICTION_MS, Answer, FetchSessionCache, SessionPartition
from wire.error_codes import ErrorCode
from wire.fetch_session_epochs import next_epoch
from wire.primitives import INT32_MAX


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def partitions(count: int, topic: str = "t", offset: int = 0) -> list[SessionPartition]:
    return [SessionPartition(topic, bytes(16), i, offset, 1 << 20, -1) for i in range(count)]


def response(hw: int = 10, log_start: int = 0, error: int = ErrorCode.NONE) -> dict[str, Any]:
    return {"high_watermark": hw, "log_start_offset": log_start, "error_code": error}


def answer_all(targets: list[SessionPartition] | Any, hw: int = 10, records: int = 0) -> list[Answer]:
    return [(t, response(hw), records) for t in targets]


def open_session(cache: FetchSessionCache, count: int, *, privileged: bool = False, topic: str = "t") -> int:
    context = cache.begin(0, 0, False, partitions(count, topic), [])
    assert context.create
    _error, session_id, _kept = cache.finish(context, privileged, answer_all(context.targets))
    return session_id


def test_next_epoch_wraps_to_one_and_keeps_final() -> None:
    assert [next_epoch(e) for e in (0, 1, INT32_MAX, -1)] == [1, 2, 1, -1]


def test_full_fetch_with_epoch_zero_opens_a_session_at_epoch_one() -> None:
    cache = FetchSessionCache(10, 1000, FakeClock())
    session_id = open_session(cache, 3)
    assert session_id > 0
    assert cache.sessions[session_id].epoch == 1
    assert cache.partitions == 3


def test_sessionless_full_fetch_opens_nothing_and_closes_the_named_session() -> None:
    cache = FetchSessionCache(10, 1000, FakeClock())
    session_id = open_session(cache, 3)
    context = cache.begin(session_id, -1, False, partitions(2), [])
    error, answered_id, kept = cache.finish(context, False, answer_all(context.targets))
    assert (error, answered_id, len(kept)) == (ErrorCode.NONE, 0, 2)
    assert cache.sessions == {} and cache.partitions == 0


def test_epoch_zero_naming_a_session_replaces_it() -> None:
    cache = FetchSessionCache(10, 1000, FakeClock())
    first = open_session(cache, 3)
    context = cache.begin(first, 0, False, partitions(1), [])
    _error, second, _kept = cache.finish(context, False, answer_all(context.targets))
    assert list(cache.sessions) == [second] and second != first
    assert cache.partitions == 1


@pytest.mark.parametrize(
    ("known", "epoch", "uses_ids", "error"),
    [
        (False, 1, False, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
        (True, 2, False, ErrorCode.INVALID_FETCH_SESSION_EPOCH),
        (True, 1, True, ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR),
    ],
)
def test_incremental_fetch_errors(known: bool, epoch: int, uses_ids: bool, error: ErrorCode) -> None:
    cache = FetchSessionCache(10, 1000, FakeClock())
    session_id = open_session(cache, 2)
    context = cache.begin(session_id if known else session_id + 1, epoch, uses_ids, [], [])
    assert context.error == error and not context.targets


def test_incremental_answer_keeps_only_partitions_with_news() -> None:
    cache = FetchSessionCache(10, 1000, FakeClock())
    session_id = open_session(cache, 4)
    context = cache.begin(session_id, 1, False, [], [])
    assert [t.partition for t in context.targets] == [0, 1, 2, 3]
    t0, t1, t2, t3 = context.targets
    answered: list[Answer] = [
        (t0, response(10), 0),  # nothing new
        (t1, response(10), 50),  # records
        (t2, response(11), 0),  # high watermark moved
        (t3, response(10, log_start=4), 0),  # log start moved
    ]
    error, answered_id, kept = cache.finish(context, False, answered)
    assert (error, answered_id) == (ErrorCode.NONE, session_id)
    assert [t.partition for t, _r, _s in kept] == [1, 2, 3]
    # The partition that returned records goes to the back of the session's order.
    assert [t.partition for t in cache.sessions[session_id].partitions.values()] == [0, 2, 3, 1]
    # What was told is remembered: the same answer again has nothing new.
    context = cache.begin(session_id, 2, False, [], [])
    _error, _id, kept = cache.finish(
        context,
        False,
        [
            (t, response(11 if t.partition == 2 else 10, log_start=4 if t.partition == 3 else 0), 0)
            for t in context.targets
        ],
    )
    assert kept == []


def test_a_diverging_epoch_is_always_answered() -> None:
    cache = FetchSessionCache(10, 1000, FakeClock())
    session_id = open_session(cache, 1)
    context = cache.begin(session_id, 1, False, [], [])
    diverged = response(10) | {"diverging_epoch": {"epoch": 1, "end_offset": 5}}
    _error, _id, kept = cache.finish(context, True, [(context.targets[0], diverged, 0)])
    assert len(kept) == 1  # the follower must truncate, though the high watermark is as told


def test_errors_are_always_answered_and_reanswered_once_cleared() -> None:
    cache = FetchSessionCache(10, 1000, FakeClock())
    session_id = open_session(cache, 1)
    for epoch, answer, included in [
        (1, response(-1, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), True),
        (2, response(-1, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), True),
        (3, response(10), True),
        (4, response(10), False),
    ]:
        context = cache.begin(session_id, epoch, False, [], [])
        _error, _id, kept = cache.finish(context, False, [(context.targets[0], answer, 0)])
        assert bool(kept) == included, epoch


def test_incremental_request_adds_updates_and_forgets() -> None:
    cache = FetchSessionCache(10, 1000, FakeClock())
    session_id = open_session(cache, 2)
    added = SessionPartition("u", bytes(16), 0, 5, 100, -1)
    moved = SessionPartition("t", bytes(16), 1, 42, 200, 3)
    context = cache.begin(session_id, 1, False, [added, moved], [("t", 0), ("gone", 9)])
    assert [(t.topic, t.partition, t.fetch_offset) for t in context.targets] == [("t", 1, 42), ("u", 0, 5)]
    assert cache.partitions == 2
    # A new partition has never been told anything: it is answered even with no news.
    _error, _id, kept = cache.finish(context, False, answer_all(context.targets))
    assert [t.topic for t, _r, _s in kept] == ["u"]


def test_forgetting_every_partition_closes_the_session_sessionless() -> None:
    cache = FetchSessionCache(10, 1000, FakeClock())
    session_id = open_session(cache, 1)
    context = cache.begin(session_id, 1, False, [], [("t", 0)])
    assert context.session is None and not context.create
    assert cache.sessions == {} and cache.partitions == 0


def test_a_concurrent_fetch_moving_the_epoch_invalidates_the_earlier_answer() -> None:
    cache = FetchSessionCache(10, 1000, FakeClock())
    session_id = open_session(cache, 1)
    waiting = cache.begin(session_id, 1, False, [], [])
    later = cache.begin(session_id, 2, False, [], [])
    assert later.error == ErrorCode.NONE
    assert cache.finish(waiting, False, answer_all(waiting.targets)) == (
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        session_id,
        [],
    )


def test_zero_slots_declines_every_session() -> None:
    cache = FetchSessionCache(0, 1000, FakeClock())
    assert open_session(cache, 3) == 0 and cache.sessions == {}


def test_full_cache_evicts_a_stale_session_first() -> None:
    clock = FakeClock()
    cache = FetchSessionCache(2, 1000, clock)
    stale = open_session(cache, 50)
    clock.now += 10
    fresh = open_session(cache, 1)
    clock.now += EVICTION_MS  # `stale` unused for longer than the eviction time; `fresh` not
    newcomer = open_session(cache, 1)
    assert set(cache.sessions) == {fresh, newcomer} and stale not in cache.sessions


def test_full_cache_evicts_only_aged_smaller_sessions() -> None:
    clock = FakeClock()
    cache = FetchSessionCache(2, 1000, clock)
    small = open_session(cache, 2)
    big = open_session(cache, 10)
    # Young sessions cannot be evicted by a bigger newcomer.
    assert open_session(cache, 20) == 0
    # Once touched after the eviction time, both are evictable; the smaller goes, and only for
    # a newcomer worth more than it.
    clock.now += EVICTION_MS - 1
    for session_id in (small, big):
        cache.touch(cache.sessions[session_id], clock.now + 2)
    clock.now += 2
    assert open_session(cache, 2) == 0  # equal size is not worth more
    newcomer = open_session(cache, 3)
    assert set(cache.sessions) == {big, newcomer}


def test_privileged_sessions_evict_young_consumer_sessions_but_not_the_reverse() -> None:
    clock = FakeClock()
    cache = FetchSessionCache(1, 1000, clock)
    consumer = open_session(cache, 10)
    follower = open_session(cache, 1, privileged=True)
    assert follower and consumer not in cache.sessions
    assert open_session(cache, 100) == 0  # a consumer cannot evict a young follower session


def test_partition_cap_declines_and_evicts_like_the_slots() -> None:
    clock = FakeClock()
    cache = FetchSessionCache(100, 10, clock)
    assert open_session(cache, 11) == 0  # larger than the cap on its own
    assert open_session(cache, 6) != 0
    assert open_session(cache, 5) == 0  # would pass the cap; the first is young
    clock.now += EVICTION_MS + 1
    second = open_session(cache, 5)  # the first went stale and makes room
    assert list(cache.sessions) == [second] and cache.partitions == 5


def test_incremental_growth_past_the_partition_cap_closes_the_session() -> None:
    cache = FetchSessionCache(100, 10, FakeClock())
    session_id = open_session(cache, 8)
    context = cache.begin(session_id, 1, False, partitions(3, "more"), [])
    assert context.session is None and [t.topic for t in context.targets] == ["more"] * 3
    assert cache.sessions == {} and cache.partitions == 0
