"""Streams groups: endpoint information for interactive queries (KIP-1071)."""

from __future__ import annotations

from typing import Any

from coordinator.streams.endpoints import endpoint_partitions
from coordinator.streams.topology import StreamsTopology
from tests.coordinator.conftest import Harness
from tests.coordinator.test_streams_groups import create_internal_topics, heartbeat, tasks

EVERY_PARTITION = list(range(6))


def beat(
    h: Harness,
    member: str,
    epoch: int,
    *,
    endpoint: tuple[str, int] | None = None,
    seen: int = -1,
    active: dict[str, list[int]] | None = None,
) -> dict[str, Any]:
    """A heartbeat of ``member``; ``seen`` is the endpoint information epoch it last got."""
    return heartbeat(
        h,
        member,
        epoch,
        active,
        user_endpoint=endpoint,
        endpoint_information_epoch=seen,
    )


def served(response: dict[str, Any]) -> dict[tuple[str, int], dict[str, list[int]]]:
    """The answer's endpoints with their active partitions by topic."""
    found: dict[tuple[str, int], dict[str, list[int]]] = {}
    for entry in response["partitions_by_user_endpoint"]:
        endpoint = (entry["user_endpoint"]["host"], entry["user_endpoint"]["port"])
        by_topic = found.setdefault(endpoint, {})
        for topic in entry["active_partitions"]:
            by_topic.setdefault(topic["topic"], []).extend(topic["partitions"])
    return found


def test_a_lone_member_with_an_endpoint_learns_what_it_serves(h: Harness) -> None:
    create_internal_topics(h)
    joined = beat(h, "m1", 0, endpoint=("host-1", 7001))
    # The group's first heartbeat: Kafka 4.3 answers endpoint epoch 0 (a group it just created
    # starts over from its records), with the partitions since the member had seen none (-1).
    assert joined["endpoint_information_epoch"] == 0
    assert served(joined) == {
        ("host-1", 7001): {"orders": EVERY_PARTITION, "app-repartition": EVERY_PARTITION}
    }
    assert joined["partitions_by_user_endpoint"][0]["standby_partitions"] == []
    again = beat(h, "m1", joined["member_epoch"], seen=0, active=tasks(joined))
    assert (again["endpoint_information_epoch"], again["partitions_by_user_endpoint"]) == (0, None)


def test_members_without_endpoints_get_an_empty_list_and_never_bump_the_epoch(h: Harness) -> None:
    create_internal_topics(h)
    first = beat(h, "m1", 0)
    assert (first["endpoint_information_epoch"], first["partitions_by_user_endpoint"]) == (0, [])
    second = beat(h, "m2", 0, seen=0)
    assert (second["endpoint_information_epoch"], second["partitions_by_user_endpoint"]) == (0, None)


def test_the_epoch_moves_with_the_tasks_of_members_with_endpoints(h: Harness) -> None:
    create_internal_topics(h)
    first = beat(h, "m1", 0, endpoint=("host-1", 7001))
    second = beat(h, "m2", 0, endpoint=("host-2", 7002), seen=-1)
    assert second["endpoint_information_epoch"] == 1  # a member with an endpoint joined
    assert served(second) == {
        ("host-1", 7001): {"orders": EVERY_PARTITION, "app-repartition": EVERY_PARTITION},
        ("host-2", 7002): {},
    }
    # m1 gives up half of its tasks: what it holds changed, so the epoch moves and m1, which
    # had seen 0, gets every endpoint again.
    revoked = beat(h, "m1", first["member_epoch"], seen=0, active=tasks(first))
    assert revoked["endpoint_information_epoch"] == 2
    kept = tasks(revoked)
    assert served(revoked)[("host-1", 7001)] == {"orders": kept["0"], "app-repartition": kept["1"]}
    done = beat(h, "m1", first["member_epoch"], seen=2, active=kept)
    assert done["partitions_by_user_endpoint"] is None  # nothing it holds changed
    taken = beat(h, "m2", second["member_epoch"], seen=1, active={})
    assert taken["endpoint_information_epoch"] == 3
    every = served(taken)
    for topic in ("orders", "app-repartition"):
        held = sorted(p for by_topic in every.values() for p in by_topic.get(topic, []))
        assert held == EVERY_PARTITION  # each partition served by exactly one endpoint
    assert set(every) == {("host-1", 7001), ("host-2", 7002)}
    # A heartbeat with the current epoch and no change gets no list.
    quiet = beat(h, "m2", taken["member_epoch"], seen=3, active=tasks(taken))
    assert (quiet["endpoint_information_epoch"], quiet["partitions_by_user_endpoint"]) == (3, None)


def test_partitions_are_cut_to_the_topics_partition_count() -> None:
    topology = StreamsTopology.from_request(
        {
            "epoch": 0,
            "subtopologies": [
                {
                    "subtopology_id": "0",
                    "source_topics": ["wide", "narrow"],
                    "source_topic_regex": [],
                    "state_changelog_topics": [],
                    "repartition_sink_topics": [],
                    "repartition_source_topics": [],
                    "copartition_groups": [],
                }
            ],
        }
    )
    entry = endpoint_partitions(
        ("h", 1), {"0": frozenset({3, 0, 2})}, {"0": frozenset({1})}, topology, {"wide": 4, "narrow": 2}
    )
    assert entry == {
        "user_endpoint": {"host": "h", "port": 1},
        "active_partitions": [
            {"topic": "narrow", "partitions": [0, 2]},
            {"topic": "wide", "partitions": [0, 2, 3]},
        ],
        "standby_partitions": [{"topic": "narrow", "partitions": [1]}, {"topic": "wide", "partitions": [1]}],
    }
