"""Website-activity events: the record format on the topic and a deterministic generator.

An event is one JSON object per Kafka record, keyed by ``user_id`` so that all of a user's
activity lands in one partition (and stays in order there)::

    {"user_id": "user-007", "page": "/cart", "action": "click", "timestamp": 1714564800123}

``timestamp`` is the event time in epoch milliseconds, and the producer also stamps it on the
record (CreateTime), so Kafka's own time index (``startingOffsetsByTimestamp``) and Spark's
event-time windows agree about when each event happened.

The generator is seeded and takes an explicit start time, so the same arguments always publish
the same events; the tests compute the expected results from them in plain Python.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass

PAGES = ("/", "/products", "/products/42", "/cart", "/checkout", "/blog")
ACTIONS = ("view", "click", "scroll", "purchase")
ACTION_WEIGHTS = (60, 25, 12, 3)
SPACING_MS = 1000


@dataclass(frozen=True)
class Event:
    """One user action on one page at ``timestamp`` (epoch milliseconds, event time)."""

    user_id: str
    page: str
    action: str
    timestamp: int

    def key(self) -> bytes:
        """The Kafka record key: the user, so per-user order is kept within a partition."""
        return self.user_id.encode()

    def value(self) -> bytes:
        """The Kafka record value: the event as compact JSON."""
        return json.dumps(asdict(self), separators=(",", ":")).encode()


def generate_events(
    count: int,
    *,
    seed: int,
    start_ms: int,
    users: int = 25,
    spacing_ms: int = SPACING_MS,
    max_lateness_ms: int = 20_000,
) -> Iterator[Event]:
    """Yield ``count`` events about ``spacing_ms`` apart starting at ``start_ms``.

    Each event is stamped up to ``max_lateness_ms`` earlier than its place in the sequence, the
    way real clicks arrive slightly out of order; keep it below the streaming job's watermark
    delay or Spark will rightly drop the late ones.
    """
    rng = random.Random(seed)
    for index in range(count):
        yield Event(
            user_id=f"user-{rng.randrange(users):03d}",
            page=rng.choice(PAGES),
            action=rng.choices(ACTIONS, ACTION_WEIGHTS)[0],
            timestamp=start_ms + index * spacing_ms - rng.randrange(max_lateness_ms + 1),
        )
