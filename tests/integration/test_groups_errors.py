"""Bad input to the group APIs, sent byte-exact with the raw client, and Kafka's answers."""

from __future__ import annotations

from typing import Any

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


def join(client: RawClient, group: str, member_id: str = "", protocol: str = "range", **extra: Any) -> dict:
    body = {
        "group_id": group,
        # Long enough that a loaded machine cannot expire a member the test never heartbeats.
        "session_timeout_ms": 120_000,
        "rebalance_timeout_ms": 120_000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": protocol, "metadata": b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"}],
        **extra,
    }
    return client.request(ApiKey.JOIN_GROUP, 5, body)


def joined_member(client: RawClient, group: str) -> tuple[str, int]:
    """The two-step join of a v4+ client; returns (member id, generation)."""
    first = join(client, group)
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    second = join(client, group, first["member_id"])
    assert second["error_code"] == ErrorCode.NONE, second
    return second["member_id"], second["generation_id"]


def sync(client: RawClient, group: str, generation: int, member_id: str) -> int:
    """A SyncGroup v3 without assignments; returns its error code."""
    body = {"group_id": group, "generation_id": generation, "member_id": member_id, "assignments": []}
    return client.request(ApiKey.SYNC_GROUP, 3, body)["error_code"]


def commit(client: RawClient, group: str, topic: str, partition: int, **member: Any) -> int:
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {"partition_index": partition, "committed_offset": 5, "committed_metadata": None}
                ],
            }
        ],
        **member,
    }
    response = client.request(ApiKey.OFFSET_COMMIT, 8, body)
    return response["topics"][0]["partitions"][0]["error_code"]


def test_commits_to_unknown_topics_and_partitions(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("known", 2)
        assert commit(client, "g", "no-such-topic", 0) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert commit(client, "g", "known", 2) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert commit(client, "g", "known", 1) == ErrorCode.NONE
        fetched = client.request(
            ApiKey.OFFSET_FETCH, 7, {"group_id": "g", "topics": None, "require_stable": False}
        )
        assert fetched["topics"] == [
            {
                "name": "known",
                "partitions": [
                    {
                        "partition_index": 1,
                        "committed_offset": 5,
                        "committed_leader_epoch": -1,
                        "metadata": "",
                        "error_code": ErrorCode.NONE,
                    }
                ],
            }
        ]


def test_sync_and_heartbeat_from_non_members(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        member_id, generation = joined_member(client, "sync-g")
        assert sync(client, "sync-g", generation, "stranger") == ErrorCode.UNKNOWN_MEMBER_ID
        assert sync(client, "sync-g", generation + 1, member_id) == ErrorCode.ILLEGAL_GENERATION
        beat = client.request(
            ApiKey.HEARTBEAT, 3, {"group_id": "sync-g", "generation_id": generation, "member_id": "x"}
        )
        assert beat["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
        # A simple consumer may not commit while members own the group's partitions.
        client.create_topic("sync-t")
        assert commit(client, "sync-g", "sync-t", 0) == ErrorCode.UNKNOWN_MEMBER_ID


def test_join_without_a_common_protocol_is_inconsistent(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as first, RawClient(odradek_broker.bootstrap) as second:
        joined_member(first, "proto-g")
        refused = join(second, "proto-g", protocol="roundrobin")
        assert refused["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert refused["member_id"] == ""


def test_join_validation(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        assert join(client, "")["error_code"] == ErrorCode.INVALID_GROUP_ID
        assert join(client, "g", session_timeout_ms=100)["error_code"] == ErrorCode.INVALID_SESSION_TIMEOUT
        assert join(client, "no-such-group", "made-up-id")["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_delete_groups_refuses_live_and_unknown_groups(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        joined_member(client, "live-g")
        response = client.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["live-g", "ghost-g", "live-g"]})
        assert [(r["group_id"], r["error_code"]) for r in response["results"]] == [
            ("live-g", ErrorCode.NON_EMPTY_GROUP),
            ("ghost-g", ErrorCode.GROUP_ID_NOT_FOUND),
        ]
