"""Partition leaders and log offsets for many topics at once, asked of each leader.

The topics page, a topic's page, group lag and the sampler all need the earliest or latest
offset of many partitions.  One ListOffsets per leader carries every partition it leads (at
most ``CHUNK`` per request, so a request stays small whatever the cluster's size), where the
command line asks one topic at a time.
"""

from __future__ import annotations

from typing import Any

from broker.cli.web.links import Session
from broker.client.admin_client import READ_UNCOMMITTED, topic_entries
from wire.api_keys import ApiKey

Partition = tuple[str, int]
CHUNK = 5000
LIST_OFFSETS_VERSION = 7
INT64_MAX = 2**63 - 1
"""The highest offset or timestamp the protocol carries (an int64)."""


def leaders(metadata: dict[str, Any]) -> dict[Partition, int]:
    """The leader of every partition in a Metadata answer (-1 where it has none)."""
    return {
        (topic["name"], p["partition_index"]): p["leader_id"]
        for topic in metadata["topics"]
        for p in topic["partitions"]
    }


def log_offsets(s: Session, led: dict[Partition, int], timestamp: int) -> dict[Partition, int]:
    """The offset for ``timestamp`` (LATEST, EARLIEST or a time) of each partition that has a
    leader and answers without error; others are left out, and the pages show them as unknown."""
    by_leader: dict[int, list[Partition]] = {}
    for partition, leader in sorted(led.items()):
        if leader >= 0:
            by_leader.setdefault(leader, []).append(partition)
    found: dict[Partition, int] = {}
    for leader, partitions in by_leader.items():
        for start in range(0, len(partitions), CHUNK):
            chunk = dict.fromkeys(partitions[start : start + CHUNK], timestamp)
            body = {
                "replica_id": -1,
                "isolation_level": READ_UNCOMMITTED,
                "topics": topic_entries(chunk, lambda p, t: {"partition_index": p, "timestamp": t}),
            }
            answer = s.node(leader).request(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, body)
            for topic in answer["topics"]:
                for p in topic["partitions"]:
                    if p["error_code"] == 0:
                        found[(topic["name"], p["partition_index"])] = p["offset"]
    return found
