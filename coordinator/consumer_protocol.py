"""The embedded "consumer" protocol's subscription format, as far as the coordinator reads it.

Classic consumer groups exchange their subscriptions as opaque JoinGroup metadata; only the
members and the leader interpret them.  The coordinator peeks at one field, the subscribed
topic names (the first field of every ConsumerProtocolSubscription version), to know which
topics a group still consumes.  Anything it cannot parse means "unknown", never an error.
"""

from __future__ import annotations

from wire.errors import DecodeError
from wire.primitives import INT16, read_array_length, read_string


def subscribed_topics(metadata: bytes) -> set[str] | None:
    """Topic names of a serialized ConsumerProtocolSubscription, or None if unparsable."""
    try:
        if len(metadata) < INT16.size:
            return None
        pos = INT16.size  # the subscription's own version; topics come first in every version
        count, pos = read_array_length(metadata, pos, 2)
        topics: set[str] = set()
        for _ in range(count or 0):
            topic, pos = read_string(metadata, pos)
            if topic is None:
                return None
            topics.add(topic)
        return topics
    except DecodeError:
        return None
