"""Share sessions and their errors, request by request (KIP-932), against a real broker.

Stock share consumers keep their session right; these requests do what they never do: skip an
epoch, continue a session that is gone, acknowledge in the request that opens one, hold records
and vanish with their connection. The errors are Kafka's, placed where Kafka places them.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.brokers import odradek_cli as odradek
from compat_tests.kit.raw_protocol import RawClient, make_batch
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode as E

SHARE_FETCH_VERSION = 1


def produce(client: RawClient, topic: str, count: int) -> None:
    batch = make_batch([b"v%d" % i for i in range(count)])
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    answer = client.request(ApiKey.PRODUCE, 9, body)
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == E.NONE


def join(client: RawClient, group: str, member: str, topic: str) -> None:
    answer = client.request(
        ApiKey.SHARE_GROUP_HEARTBEAT,
        1,
        {
            "group_id": group,
            "member_id": member,
            "member_epoch": 0,
            "rack_id": None,
            "subscribed_topic_names": [topic],
        },
    )
    assert answer["error_code"] == E.NONE, answer


def share_fetch(
    client: RawClient,
    group: str,
    member: str,
    epoch: int,
    topic_id: bytes,
    acks: list[dict[str, Any]] | None = None,
    max_wait_ms: int = 2000,
) -> dict[str, Any]:
    body = {
        "group_id": group,
        "member_id": member,
        "share_session_epoch": epoch,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "max_records": 500,
        "batch_size": 500,
        "topics": [
            {
                "topic_id": topic_id,
                "partitions": [
                    {
                        "partition_index": 0,
                        "partition_max_bytes": 1 << 20,
                        "acknowledgement_batches": acks or [],
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
    }
    return client.request(ApiKey.SHARE_FETCH, SHARE_FETCH_VERSION, body)


def acquired(answer: dict[str, Any]) -> list[tuple[int, int, int]]:
    return [
        (a["first_offset"], a["last_offset"], a["delivery_count"])
        for t in answer["responses"]
        for p in t["partitions"]
        for a in p["acquired_records"]
    ]


def setup(broker: OdradekProcess) -> tuple[RawClient, str, str, bytes]:
    """A client, a topic with five records, and a share group starting at the earliest offset."""
    client = RawClient(broker.bootstrap)
    topic, group = f"share-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    client.create_topic(topic, 1)
    alter = {
        "resources": [
            {
                "resource_type": 32,
                "resource_name": group,
                "configs": [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}],
            }
        ],
        "validate_only": False,
    }
    assert client.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, alter)["responses"][0]["error_code"] == E.NONE
    produce(client, topic, 5)
    topic_id = client.metadata([topic])["topics"][0]["topic_id"]
    return client, topic, group, bytes(topic_id)


def test_session_epochs_are_checked_and_acknowledgements_need_an_open_session(
    odradek_broker: OdradekProcess,
) -> None:
    client, topic, group, topic_id = setup(odradek_broker)
    member = uuid.uuid4().hex
    join(client, group, member, topic)
    # Acknowledging in the request that opens a session is refused as a whole.
    ack = [{"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}]
    assert share_fetch(client, group, member, 0, topic_id, ack)["error_code"] == E.INVALID_REQUEST
    # A session that was never opened, then one at the wrong epoch.
    assert share_fetch(client, group, member, 3, topic_id)["error_code"] == E.SHARE_SESSION_NOT_FOUND
    opened = share_fetch(client, group, member, 0, topic_id)
    assert opened["error_code"] == E.NONE and acquired(opened) == [(0, 4, 1)]
    assert share_fetch(client, group, member, 2, topic_id)["error_code"] == E.INVALID_SHARE_SESSION_EPOCH
    # The right epoch: accept 0-2, release 3-4; the released ones come back with count 2.
    acks = [
        {"first_offset": 0, "last_offset": 2, "acknowledge_types": [1]},
        {"first_offset": 3, "last_offset": 4, "acknowledge_types": [2]},
    ]
    answer = share_fetch(client, group, member, 1, topic_id, acks)
    partition = answer["responses"][0]["partitions"][0]
    assert partition["acknowledge_error_code"] == E.NONE
    assert acquired(answer) == [(3, 4, 2)]
    # A ShareAcknowledge may not open a session.
    opened_by_ack = client.request(
        ApiKey.SHARE_ACKNOWLEDGE,
        1,
        {
            "group_id": group,
            "member_id": member,
            "share_session_epoch": 0,
            "is_renew_ack": False,
            "topics": [],
        },
    )
    assert opened_by_ack["error_code"] == E.INVALID_SHARE_SESSION_EPOCH


def test_records_held_by_a_closed_connection_are_delivered_again_at_once(
    odradek_broker: OdradekProcess,
) -> None:
    holder, topic, group, topic_id = setup(odradek_broker)
    first, second = uuid.uuid4().hex, uuid.uuid4().hex
    join(holder, group, first, topic)
    assert acquired(share_fetch(holder, group, first, 0, topic_id)) == [(0, 4, 1)]
    other = RawClient(odradek_broker.bootstrap)
    join(other, group, second, topic)
    # While the first member holds them, nothing is there for the second.
    assert acquired(share_fetch(other, group, second, 0, topic_id, max_wait_ms=200)) == []
    holder.close()  # its share session ends with the connection; its records are released
    assert acquired(share_fetch(other, group, second, 1, topic_id, max_wait_ms=5000)) == [(0, 4, 2)]
    other.close()


def test_odradek_groups_lists_and_describes_a_share_group(odradek_broker: OdradekProcess) -> None:
    client, topic, group, topic_id = setup(odradek_broker)
    member = uuid.uuid4().hex
    join(client, group, member, topic)
    assert acquired(share_fetch(client, group, member, 0, topic_id)) == [(0, 4, 1)]
    share_fetch(
        client,
        group,
        member,
        1,
        topic_id,
        [{"first_offset": 0, "last_offset": 1, "acknowledge_types": [1]}],
        0,
    )
    bootstrap = ["--bootstrap", odradek_broker.bootstrap]
    listed = json.loads(odradek("groups", "list", "--output", "json", *bootstrap).stdout)
    assert {"group": group, "type": "share", "state": "Stable", "protocol_type": "share"} in listed
    described = odradek("groups", "describe", group, *bootstrap)
    assert described.returncode == 0, described.stderr
    assert f"share group {group}: state Stable, members: {member}" in described.stdout
    rows = [line.split() for line in described.stdout.splitlines()]
    assert ["TOPIC", "PARTITION", "START-OFFSET", "LAG"] in rows
    assert [topic, "0", "2", "3"] in rows  # 0-1 accepted; 2-4 still to be done
    client.close()


def test_made_up_partitions_are_answered_once_and_not_kept(odradek_broker: OdradekProcess) -> None:
    client, topic, group, topic_id = setup(odradek_broker)
    member = uuid.uuid4().hex
    join(client, group, member, topic)
    made_up = bytes(range(1, 17))
    answer = share_fetch(client, group, member, 0, made_up, max_wait_ms=0)
    codes = [(t["topic_id"], p["error_code"]) for t in answer["responses"] for p in t["partitions"]]
    assert codes == [(made_up, E.UNKNOWN_TOPIC_ID)]
    # The session kept nothing of it: the next fetch, for the real topic, answers only that.
    real = share_fetch(client, group, member, 1, topic_id)
    assert [t["topic_id"] for t in real["responses"]] == [topic_id]
    assert acquired(real) == [(0, 4, 1)]
    client.close()
