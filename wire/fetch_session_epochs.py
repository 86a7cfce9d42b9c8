"""KIP-227's session ids and epochs, as Kafka's ``FetchMetadata`` defines them.

Both ends of a fetch session follow them: the broker's session cache
(``broker.services.storage.fetch_sessions``) and a follower's session with its leader
(``broker.services.replication.fetch_session``).  Kept here, below both, as protocol facts.
"""

from __future__ import annotations

from wire.primitives import INT32_MAX

INVALID_SESSION_ID = 0
"""A request that opens a session, or a sessionless one, names session 0."""
INITIAL_EPOCH = 0
"""The epoch of a request that opens a session (a full fetch)."""
FINAL_EPOCH = -1
"""The epoch of a request that closes its session (or a sessionless full fetch)."""


def next_epoch(epoch: int) -> int:
    """Kafka's ``FetchMetadata.nextEpoch``: -1 stays -1 and the epoch wraps from INT32_MAX to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1
