"""Produce v13 and Fetch v13+ address topics by id: the ids Metadata hands out, kept across restarts."""

from __future__ import annotations

import uuid

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient, make_batch
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.record_batch import decode_records, scan_batches


def only_partition(client: RawClient, api: ApiKey, version: int, body: dict, topic_id: bytes) -> dict:
    """Send a request naming one partition of the topic ``topic_id``; its answer for that partition."""
    (topic,) = client.request(api, version, body)["responses"]
    assert topic["topic_id"] == topic_id
    (partition,) = topic["partitions" if api is ApiKey.FETCH else "partition_responses"]
    return partition


def fetch_by_id(client: RawClient, topic_id: bytes, offset: int) -> dict:
    wanted = {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
    body = {
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "session_epoch": -1,
        "topics": [{"topic_id": topic_id, "partitions": [wanted]}],
    }
    return only_partition(client, ApiKey.FETCH, 16, body, topic_id)


def test_fetch_by_topic_id_survives_restart(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("by-id")
        assert client.produce("by-id", 0, make_batch([b"a", b"b"]))["error_code"] == ErrorCode.NONE
        topic_id = client.metadata(["by-id"])["topics"][0]["topic_id"]
    odradek_broker.restart()
    with RawClient(odradek_broker.bootstrap) as client:
        assert client.metadata(["by-id"])["topics"][0]["topic_id"] == topic_id
        partition = fetch_by_id(client, topic_id, 0)
        assert partition["error_code"] == ErrorCode.NONE
        records = bytes(partition["records"])
        (batch,) = scan_batches(records, from_client=False)
        assert [r.value for r in decode_records(records, batch)] == [b"a", b"b"]
        unknown = fetch_by_id(client, uuid.uuid4().bytes, 0)
        assert unknown["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID


def produce_by_id(client: RawClient, topic_id: bytes, values: list[bytes]) -> dict:
    data = [{"topic_id": topic_id, "partition_data": [{"index": 0, "records": make_batch(values)}]}]
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 10_000, "topic_data": data}
    return only_partition(client, ApiKey.PRODUCE, 13, body, topic_id)


def test_produce_v13_by_topic_id(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("produce-by-id")
        topic_id = client.metadata(["produce-by-id"])["topics"][0]["topic_id"]
        assert produce_by_id(client, topic_id, [b"x", b"y"])["base_offset"] == 0
        assert produce_by_id(client, topic_id, [b"z"])["base_offset"] == 2
        assert (
            produce_by_id(client, uuid.uuid4().bytes, [b"lost"])["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
        )
        partition = fetch_by_id(client, topic_id, 2)
        records = bytes(partition["records"])
        (batch,) = scan_batches(records, from_client=False)
        assert [r.value for r in decode_records(records, batch)] == [b"z"]


def commit_by_id(client: RawClient, group: str, topic_id: bytes, offset: int) -> dict:
    """OffsetCommit v10 (topics by id) for a simple consumer (no generation)."""
    response = client.request(
        ApiKey.OFFSET_COMMIT,
        10,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {"partition_index": 0, "committed_offset": offset, "committed_metadata": "m"}
                    ],
                }
            ],
        },
    )
    (topic,) = response["topics"]
    return topic


def fetch_committed_by_id(client: RawClient, group: str, topic_ids: list[bytes] | None) -> list[dict]:
    """OffsetFetch v10 of ``topic_ids`` (None: everything the group committed)."""
    topics = None if topic_ids is None else [{"topic_id": t, "partition_indexes": [0]} for t in topic_ids]
    response = client.request(
        ApiKey.OFFSET_FETCH, 10, {"groups": [{"group_id": group, "member_epoch": -1, "topics": topics}]}
    )
    (found,) = response["groups"]
    assert found["error_code"] == ErrorCode.NONE, found
    return found["topics"]


def test_offsets_are_committed_and_fetched_by_topic_id(odradek_broker: OdradekProcess) -> None:
    """OffsetCommit/OffsetFetch v10 (KIP-848) name topics by id; an id no topic has is
    UNKNOWN_TOPIC_ID, and what v10 commits, a client asking by name (v9) reads back."""
    unknown_id = uuid.uuid4().bytes
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("offsets-by-id")
        topic_id = client.metadata(["offsets-by-id"])["topics"][0]["topic_id"]
        committed = commit_by_id(client, "g-by-id", topic_id, 42)
        assert committed["topic_id"] == topic_id
        assert committed["partitions"] == [{"partition_index": 0, "error_code": ErrorCode.NONE}]
        refused = commit_by_id(client, "g-by-id", unknown_id, 7)
        assert refused["partitions"] == [{"partition_index": 0, "error_code": ErrorCode.UNKNOWN_TOPIC_ID}]

        for asked in ([topic_id], None):
            (topic,) = fetch_committed_by_id(client, "g-by-id", asked)
            assert topic["topic_id"] == topic_id
            (partition,) = topic["partitions"]
            assert (partition["committed_offset"], partition["metadata"]) == (42, "m")
        (unknown,) = fetch_committed_by_id(client, "g-by-id", [unknown_id])
        assert unknown["partitions"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID

        by_name = client.request(
            ApiKey.OFFSET_FETCH,
            9,
            {"groups": [{"group_id": "g-by-id", "member_epoch": -1, "topics": None}]},
        )
        (topic,) = by_name["groups"][0]["topics"]
        assert (topic["name"], topic["partitions"][0]["committed_offset"]) == ("offsets-by-id", 42)
