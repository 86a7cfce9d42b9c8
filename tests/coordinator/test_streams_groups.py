"""Streams groups (KIP-1071): a topology's tasks, their assignment and revocation, statuses."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coordinator.streams.group import StreamsHeartbeat
from coordinator.streams.topology import StreamsStatus, StreamsTopology, configure
from tests.coordinator.conftest import Harness
from wire.error_codes import ErrorCode as E

WORD_COUNT = {
    "epoch": 1,
    "subtopologies": [
        {
            "subtopology_id": "0",
            "source_topics": ["orders"],
            "source_topic_regex": [],
            "state_changelog_topics": [],
            "repartition_sink_topics": ["app-repartition"],
            "repartition_source_topics": [],
            "copartition_groups": [],
        },
        {
            "subtopology_id": "1",
            "source_topics": [],
            "source_topic_regex": [],
            "state_changelog_topics": [
                {"name": "app-store-changelog", "partitions": 0, "replication_factor": 0, "topic_configs": []}
            ],
            "repartition_sink_topics": [],
            "repartition_source_topics": [
                {"name": "app-repartition", "partitions": 0, "replication_factor": 0, "topic_configs": []}
            ],
            "copartition_groups": [],
        },
    ],
}


def heartbeat(
    h: Harness,
    member: str,
    epoch: int,
    active: dict[str, list[int]] | None = None,
    topology: Any = WORD_COUNT,
    **changes: Any,
) -> dict[str, Any]:
    """A heartbeat of ``member`` (a full one when joining), with ``changes`` to its fields."""
    return h.coordinator.streams_group_heartbeat(
        replace(
            StreamsHeartbeat(
                group_id="app",
                member_id=member,
                member_epoch=epoch,
                instance_id=None,
                rack_id=None,
                rebalance_timeout_ms=30_000 if epoch == 0 else -1,
                topology=StreamsTopology.from_request(topology) if epoch == 0 else None,
                active_tasks={} if epoch == 0 else active,
                process_id=f"process-{member}" if epoch == 0 else None,
                user_endpoint=None,
                client_tags=None,
                shutdown_application=False,
                client_id="streams",
                client_host="/127.0.0.1",
            ),
            **changes,
        )
    )


def tasks(response: dict[str, Any]) -> dict[str, list[int]]:
    return {t["subtopology_id"]: t["partitions"] for t in response["active_tasks"]}


def create_internal_topics(h: Harness) -> None:
    for topic in h.coordinator.streams.missing_internal_topics(
        "app", StreamsTopology.from_request(WORD_COUNT)
    ):
        h.topics.add(topic.name, topic.partitions)


def test_the_topology_is_configured_against_the_topics_that_exist() -> None:
    topology = StreamsTopology.from_request(WORD_COUNT)
    configured = configure(topology, {"orders": 6})
    assert configured.tasks == {"0": 6, "1": 6}  # the repartition topic takes its writer's size
    assert sorted((t.name, t.partitions) for t in configured.to_create) == [
        ("app-repartition", 6),
        ("app-store-changelog", 6),
    ]
    missing = configure(topology, {})
    assert [code for code, _detail in missing.status] == [StreamsStatus.MISSING_SOURCE_TOPICS]
    wrong = configure(topology, {"orders": 6, "app-store-changelog": 2})
    assert [code for code, _detail in wrong.status] == [StreamsStatus.INCORRECTLY_PARTITIONED_TOPICS]


def test_a_lone_member_gets_every_task_once_internal_topics_exist(h: Harness) -> None:
    create_internal_topics(h)
    joined = heartbeat(h, "m1", 0)
    assert joined["error_code"] == E.NONE and joined["status"] is None
    assert joined["member_epoch"] == 1
    assert tasks(joined) == {"0": list(range(6)), "1": list(range(6))}
    assert (joined["standby_tasks"], joined["warmup_tasks"]) == ([], [])


def test_missing_internal_topics_are_reported_until_created(h: Harness) -> None:
    joined = heartbeat(h, "m1", 0)
    assert [s["status_code"] for s in joined["status"]] == [StreamsStatus.MISSING_INTERNAL_TOPICS]
    create_internal_topics(h)
    h.coordinator.streams.refresh("app")
    again = heartbeat(h, "m1", joined["member_epoch"], active={})
    assert again["status"] is None and tasks(again)["0"] == list(range(6))


def test_a_task_moves_only_after_its_owner_gives_it_up(h: Harness) -> None:
    create_internal_topics(h)
    first = heartbeat(h, "m1", 0)
    second = heartbeat(h, "m2", 0)
    assert tasks(second) == {}  # everything is still m1's
    revoke = heartbeat(h, "m1", first["member_epoch"], active=tasks(first))
    kept = tasks(revoke)
    assert sum(len(p) for p in kept.values()) == 6  # half of the twelve tasks
    done = heartbeat(h, "m1", first["member_epoch"], active=kept)
    assert done["member_epoch"] == second["member_epoch"]
    taken = heartbeat(h, "m2", second["member_epoch"], active={})
    every = sorted((s, p) for t in (kept, tasks(taken)) for s, ps in t.items() for p in ps)
    assert every == sorted((s, p) for s in ("0", "1") for p in range(6))
    [described] = h.coordinator.streams_group_describe(["app"])
    assert described["group_state"] == "Stable"
    assert {m["process_id"] for m in described["members"]} == {"process-m1", "process-m2"}
    _error, listed = h.coordinator.list_groups([], ["streams"])
    assert [(g["group_id"], g["group_type"]) for g in listed] == [("app", "streams")]


def test_a_join_without_a_topology_or_with_tasks_is_invalid(h: Harness) -> None:
    refused = h.coordinator.streams_group_heartbeat(
        StreamsHeartbeat("app", "m1", 0, None, None, 30_000, None, {}, "p", None, None, False, "c", "/h")
    )
    assert refused["error_code"] == E.INVALID_REQUEST
    h.cg_heartbeat("consumers", "c1", 0)
    other = h.coordinator.streams_group_heartbeat(
        StreamsHeartbeat(
            "consumers",
            "m1",
            0,
            None,
            None,
            30_000,
            StreamsTopology.from_request(WORD_COUNT),
            {},
            "p",
            None,
            None,
            False,
            "c",
            "/h",
        )
    )
    assert other["error_code"] == E.GROUP_ID_NOT_FOUND


def test_standby_tasks_go_to_other_processes_when_configured(h: Harness) -> None:
    h.coordinator.consumer.group_configs["app"] = {"streams.num.standby.replicas": 1}
    create_internal_topics(h)
    first = heartbeat(h, "m1", 0)
    assert first["standby_tasks"] == []  # no other process to hold a copy
    second = heartbeat(h, "m2", 0)
    standby = {(t["subtopology_id"], p) for t in second["standby_tasks"] for p in t["partitions"]}
    [described] = h.coordinator.streams_group_describe(["app"])
    target = {m["member_id"]: m["target_assignment"] for m in described["members"]}
    mine = {(t["subtopology_id"], p) for t in target["m2"]["active_tasks"] for p in t["partitions"]}
    # Only the stateful subtopology (1, with the changelog) has standbys: m2's process keeps a
    # copy of each of its tasks targeted at the other process, none of its own.
    assert len(mine) == 6 and standby.isdisjoint(mine)
    assert standby | {task for task in mine if task[0] == "1"} == {("1", p) for p in range(6)}
    by_member = {m: a["standby_tasks"] for m, a in target.items()}
    assert sum(len(t["partitions"]) for tasks in by_member.values() for t in tasks) == 6


def test_a_different_topology_is_refused_while_the_group_exists(h: Harness) -> None:
    create_internal_topics(h)
    joined = heartbeat(h, "m1", 0)
    heartbeat(h, "m1", -1)  # the group is Empty now, and keeps its topology
    changed = {**WORD_COUNT, "subtopologies": [*WORD_COUNT["subtopologies"][:1]]}
    refused = heartbeat(h, "m2", 0, topology=changed)
    assert (refused["error_code"], refused["error_message"], refused["member_id"]) == (
        E.INVALID_REQUEST,
        "Topology updates are not supported yet.",
        "",
    )
    assert h.coordinator.streams.missing_internal_topics("app", StreamsTopology.from_request(changed)) == []
    assert heartbeat(h, "m2", 0)["error_code"] == E.NONE and joined["error_code"] == E.NONE
