"""A streams group survives its broker's kill -9: members go on with their ids, epochs and tasks.

Raw StreamsGroupHeartbeats over a socket (what a Kafka Streams member sends), so the test sees
the epochs themselves: after the restart the broker replays the group's records from
``__consumer_offsets`` (KIP-1071's record types 17, 19-23) and accepts the members' next
heartbeats at the epochs they had, where a broker that kept the group in memory only would answer
UNKNOWN_MEMBER_ID and make every member rejoin (and every task move).
"""

from __future__ import annotations

from typing import Any

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.confluent import ConfluentAdmin
from compat_tests.kit.raw_protocol import ask
from tests.integration.waiting import wait_until
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

GROUP = "word-count"
SOURCE = "lines"
PARTITIONS = 4


def _topology() -> dict[str, Any]:
    return {
        "epoch": 0,
        "subtopologies": [
            {
                "subtopology_id": "0",
                "source_topics": [SOURCE],
                "source_topic_regex": [],
                "state_changelog_topics": [
                    {
                        "name": f"{GROUP}-counts-changelog",
                        "partitions": 0,
                        "replication_factor": 0,
                        "topic_configs": [],
                    }
                ],
                "repartition_sink_topics": [],
                "repartition_source_topics": [],
                "copartition_groups": [],
            }
        ],
    }


def _heartbeat(broker: OdradekProcess, member: str, epoch: int, active: list[Any] | None) -> dict[str, Any]:
    joining = epoch == 0
    body = {
        "group_id": GROUP,
        "member_id": member,
        "member_epoch": epoch,
        "endpoint_information_epoch": -1,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 30_000 if joining else -1,
        "topology": _topology() if joining else None,
        "active_tasks": [] if joining else active,
        "standby_tasks": [] if joining else None,
        "warmup_tasks": [] if joining else None,
        "process_id": f"process-{member}" if joining else None,
        "user_endpoint": None,
        "client_tags": [] if joining else None,
        "task_offsets": None,
        "task_end_offsets": None,
        "shutdown_application": False,
    }
    return ask(broker.bootstrap, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, body, 10.0)


def _describe(broker: OdradekProcess) -> dict[str, Any]:
    answer = ask(
        broker.bootstrap,
        ApiKey.STREAMS_GROUP_DESCRIBE,
        0,
        {"group_ids": [GROUP], "include_authorized_operations": False},
        10.0,
    )
    return answer["groups"][0]


def _stable(broker: OdradekProcess, members: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Heartbeat every member (reporting the tasks it holds) until the group is Stable; the
    group as StreamsGroupDescribe then shows it."""
    described: dict[str, Any] = {}

    def settled() -> bool:
        for member, last in members.items():
            answer = _heartbeat(broker, member, last["member_epoch"], last["held"])
            assert answer["error_code"] == ErrorCode.NONE, answer
            answer["held"] = answer["active_tasks"] if answer["active_tasks"] is not None else last["held"]
            members[member] = answer
        described.update(_describe(broker))
        return described["group_state"] == "Stable"

    wait_until(settled, "a Stable streams group", timeout_s=30.0)
    return described


def test_a_streams_group_rides_through_a_broker_kill(odradek_broker: OdradekProcess) -> None:
    with ConfluentAdmin(odradek_broker.bootstrap) as admin:
        admin.create_topic(SOURCE, PARTITIONS)
    members = {name: _heartbeat(odradek_broker, name, 0, None) for name in ("a", "b")}
    for answer in members.values():
        assert answer["error_code"] == ErrorCode.NONE, answer
        answer["held"] = answer["active_tasks"]
    before = _stable(odradek_broker, members)

    odradek_broker.restart(crash=True)

    after = _describe(odradek_broker)
    assert after["error_code"] == ErrorCode.NONE
    assert (after["group_epoch"], after["assignment_epoch"]) == (
        before["group_epoch"],
        before["assignment_epoch"],
    )
    assert after["members"] == before["members"]
    for name, last in members.items():
        answer = _heartbeat(odradek_broker, name, last["member_epoch"], last["held"])
        assert answer["error_code"] == ErrorCode.NONE, f"{name} after the restart: {answer}"
        assert answer["member_epoch"] == last["member_epoch"]
