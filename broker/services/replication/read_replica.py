"""Fetching from the closest replica (KIP-392): which replica a consumer should read from.

With ``replica.selector.class`` set to Kafka's ``RackAwareReplicaSelector``, the leader of a
partition answers a consumer's Fetch (v11+, naming its ``client.rack`` in ``rack_id``) with a
``preferred_read_replica`` instead of records when another replica in the consumer's rack can
serve it; the consumer then fetches from that follower, which serves consumers up to its high
watermark. Across racks (or availability zones) that saves the traffic that costs most.

As Kafka's ``ReplicaManager.findPreferredReadReplica`` and ``RackAwareReplicaSelector``: only the
leader chooses; the candidates are the leader and the followers that are caught up (within
``replica.lag.time.max.ms``) and hold the fetch offset; among those in the client's rack the
leader wins, else the one with the highest log end offset, then the most recently caught up. A
client without a rack, or with no candidate in its rack, reads from the leader.
"""

from __future__ import annotations

from collections.abc import Callable

from broker.services.replication.leader_state import LeaderState


def preferred_read_replica(
    state: LeaderState,
    client_rack: str,
    fetch_offset: int,
    leader_end: int,
    now_ms: int,
    max_lag_ms: int,
    rack_of: Callable[[int], str | None],
) -> int:
    """The replica a consumer in ``client_rack`` should read from at ``fetch_offset``: a
    follower's id, or the leader's (``state.node_id``) to read here."""
    leader = state.node_id
    if not client_rack or rack_of(leader) == client_rack:
        return leader
    candidates = [
        (progress.log_end_offset, progress.last_caught_up_ms, replica)
        for replica, progress in state.followers.items()
        if rack_of(replica) == client_rack
        and progress.log_end_offset >= fetch_offset
        and progress.caught_up(leader_end, now_ms, max_lag_ms)
    ]
    return max(candidates)[2] if candidates else leader
