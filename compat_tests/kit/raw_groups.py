"""Joining members of share and streams groups by hand (one raw heartbeat each), for scenarios
that need such a group to exist without starting a Java client: a share consumer or a Kafka
Streams application is a JVM of its own, seconds to start, where a heartbeat is a request."""

from __future__ import annotations

from typing import Any

from compat_tests.kit.raw_protocol import ask
from wire.api_keys import ApiKey

FIND_COORDINATOR_VERSION = 4
SHARE_HEARTBEAT_VERSION = 1
STREAMS_HEARTBEAT_VERSION = 0


def streams_join(group: str, source: str = "words", **changes: Any) -> dict[str, Any]:
    """A first StreamsGroupHeartbeat (v0) of a one-subtopology application reading ``source``,
    with ``changes`` to its fields."""
    subtopology = {
        "subtopology_id": "0",
        "source_topics": [source],
        "source_topic_regex": [],
        "state_changelog_topics": [],
        "repartition_sink_topics": [],
        "repartition_source_topics": [],
        "copartition_groups": [],
    }
    body: dict[str, Any] = {
        "group_id": group,
        "member_id": f"member-{group}",
        "member_epoch": 0,
        "endpoint_information_epoch": -1,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 30_000,
        "topology": {"epoch": 0, "subtopologies": [subtopology]},
        "active_tasks": [],
        "standby_tasks": [],
        "warmup_tasks": [],
        "process_id": "process-1",
        "user_endpoint": None,
        "client_tags": [],
        "task_offsets": None,
        "task_end_offsets": None,
        "shutdown_application": False,
    }
    body.update(changes)
    return body


def share_join(group: str, topics: list[str], member_id: str) -> dict[str, Any]:
    """A first ShareGroupHeartbeat (v1: the member names itself) subscribing to ``topics``."""
    return {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": 0,
        "rack_id": None,
        "subscribed_topic_names": topics,
    }


def find_coordinator(bootstrap: str, group: str) -> None:
    """FindCoordinator for ``group``: what makes Kafka create ``__consumer_offsets``."""
    ask(
        bootstrap,
        ApiKey.FIND_COORDINATOR,
        FIND_COORDINATOR_VERSION,
        {"key_type": 0, "coordinator_keys": [group]},
        10.0,
    )
