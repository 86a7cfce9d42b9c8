"""The pipeline's results computed in plain Python, as the oracle the Spark output must equal.

Written independently of Spark's code path (no DataFrames) so that a bug in the transforms, the
connector or the broker shows up as a difference rather than being reproduced on both sides.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable

from spark_integration.events import Event
from spark_integration.transforms import ALL_PAGES, WATERMARK_DELAY_SECONDS, WINDOW_SECONDS

ActivityRow = tuple[str, str, str, int, int]
"""(window_start, window_end, page, events, distinct_users), as the streaming job emits them."""

ReportRow = tuple[str, str, int, int]
"""(day, page, events, distinct_users), as the daily report lists them."""


def _iso(epoch_ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_ms // 1000))


def finalised_page_activity(events: Iterable[Event]) -> list[ActivityRow]:
    """The windows an append-mode query has emitted once it has processed ``events``.

    A window is final when its end is at or before the watermark, i.e. the newest event time
    minus the watermark delay; later windows are still open in Spark's state. Assumes no event
    was late, which holds when events arrive at most the watermark delay out of order.
    """
    window_ms = WINDOW_SECONDS * 1000
    users: defaultdict[tuple[int, str], set[str]] = defaultdict(set)
    counts: defaultdict[tuple[int, str], int] = defaultdict(int)
    newest = None
    for event in events:
        start = event.timestamp - event.timestamp % window_ms
        counts[start, event.page] += 1
        users[start, event.page].add(event.user_id)
        newest = event.timestamp if newest is None else max(newest, event.timestamp)
    if newest is None:
        return []
    watermark = newest - WATERMARK_DELAY_SECONDS * 1000
    return sorted(
        (_iso(start), _iso(start + window_ms), page, count, len(users[start, page]))
        for (start, page), count in counts.items()
        if start + window_ms <= watermark
    )


def daily_report(events: Iterable[Event]) -> list[ReportRow]:
    """Events and distinct users per UTC day and page, plus an all-pages line per day."""
    counts: defaultdict[tuple[str, str], int] = defaultdict(int)
    users: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    for event in events:
        day = _iso(event.timestamp)[:10]
        for page in (event.page, ALL_PAGES):
            counts[day, page] += 1
            users[day, page].add(event.user_id)
    return sorted((day, page, count, len(users[day, page])) for (day, page), count in counts.items())
