"""Checks of the group coordinator schema declarations against kafka-python's encoders.

The same method as ``test_schemas_data_plane``: a deterministic sample of every declared
version (every field set, distinct values) must round-trip through our codec, encode to the
bytes kafka-python's JSON-driven classes produce, and decode there to the same values.
ConsumerGroupHeartbeat/Describe, which kafka-python lacks, are checked against bytes written
out by hand from Kafka's message definitions.
"""

from __future__ import annotations

import struct

import pytest

from tests.wire.test_schemas_data_plane import KP_CLASSES, _names, kp_decode, kp_encode, project, sample
from wire.api_keys import ApiKey
from wire.codec import decode_request, decode_response, encode_request, encode_response
from wire.schema import Api, Field
from wire.schemas import ALL_APIS
from wire.schemas.consumer_group_describe import CONSUMER_GROUP_DESCRIBE
from wire.schemas.consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT
from wire.schemas.delete_groups import DELETE_GROUPS
from wire.schemas.describe_groups import DESCRIBE_GROUPS
from wire.schemas.find_coordinator import FIND_COORDINATOR
from wire.schemas.heartbeat import HEARTBEAT
from wire.schemas.join_group import JOIN_GROUP
from wire.schemas.leave_group import LEAVE_GROUP
from wire.schemas.list_groups import LIST_GROUPS
from wire.schemas.offset_commit import OFFSET_COMMIT
from wire.schemas.offset_delete import OFFSET_DELETE
from wire.schemas.offset_fetch import OFFSET_FETCH
from wire.schemas.sync_group import SYNC_GROUP

KAFKA_PYTHON_APIS: list[Api] = [
    OFFSET_COMMIT,
    OFFSET_FETCH,
    FIND_COORDINATOR,
    JOIN_GROUP,
    HEARTBEAT,
    LEAVE_GROUP,
    SYNC_GROUP,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    DELETE_GROUPS,
    OFFSET_DELETE,
]
ALL_GROUP_APIS = [*KAFKA_PYTHON_APIS, CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE]


def _fields(api: Api, kind: str) -> tuple[Field, ...]:
    return api.request if kind == "request" else api.response


CASES = [
    pytest.param(api, kind, version, id=f"{api.name}-{kind}-v{version}")
    for api in KAFKA_PYTHON_APIS
    for kind in ("request", "response")
    for version in api.versions
]
ROUND_TRIP_CASES = [
    pytest.param(api, kind, version, id=f"{api.name}-{kind}-v{version}")
    for api in ALL_GROUP_APIS
    for kind in ("request", "response")
    for version in api.versions
]


def test_registered_in_all_apis() -> None:
    for api in ALL_GROUP_APIS:
        assert ALL_APIS[api.key] is api


@pytest.mark.parametrize(("api", "kind", "version"), CASES)
def test_field_names_match_kafka_python(api: Api, kind: str, version: int) -> None:
    cls = KP_CLASSES[(api.key, kind)]
    assert cls.flexible_version_q(version) == (version in api.flexible)
    assert list(_names(_fields(api, kind), cls._struct, version, "")) == []


@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
@pytest.mark.parametrize(("api", "kind", "version"), CASES)
def test_bytes_agree_with_kafka_python(api: Api, kind: str, version: int, nulls: bool) -> None:
    fields = _fields(api, kind)
    body = sample(fields, version, nulls=nulls)
    encode = encode_request if kind == "request" else encode_response
    data = bytes(encode(api.key, version, body))
    assert data == kp_encode(api, kind, version, body)
    assert kp_decode(api, kind, version, data) == project(fields, version, body)


@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
@pytest.mark.parametrize(("api", "kind", "version"), ROUND_TRIP_CASES)
def test_round_trip(api: Api, kind: str, version: int, nulls: bool) -> None:
    fields = _fields(api, kind)
    body = sample(fields, version, nulls=nulls)
    encode, decode = (
        (encode_request, decode_request) if kind == "request" else (encode_response, decode_response)
    )
    data = bytes(encode(api.key, version, body))
    assert project(fields, version, decode(api.key, version, data)) == project(fields, version, body)


def _compact_string(text: str | None) -> bytes:
    return b"\x00" if text is None else bytes([len(text) + 1]) + text.encode()


def test_consumer_group_heartbeat_v1_request_bytes() -> None:
    topic_id = bytes(range(16))
    body = {
        "group_id": "g",
        "member_id": "m",
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": "r",
        "rebalance_timeout_ms": 300_000,
        "subscribed_topic_names": ["t"],
        "subscribed_topic_regex": None,
        "server_assignor": "uniform",
        "topic_partitions": [{"topic_id": topic_id, "partitions": [0, 1]}],
    }
    expected = b"".join(
        [
            _compact_string("g"),
            _compact_string("m"),
            struct.pack(">i", 0),
            _compact_string(None),
            _compact_string("r"),
            struct.pack(">i", 300_000),
            b"\x02" + _compact_string("t"),  # compact array of one string
            _compact_string(None),
            _compact_string("uniform"),
            b"\x02" + topic_id + b"\x03" + struct.pack(">ii", 0, 1) + b"\x00",
            b"\x00",  # no tagged fields
        ]
    )
    assert bytes(encode_request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)) == expected
    assert decode_request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, expected) == body


def test_consumer_group_heartbeat_response_null_and_present_assignment() -> None:
    head = (
        struct.pack(">ih", 0, 0) + _compact_string(None) + _compact_string("m") + struct.pack(">ii", 3, 5000)
    )
    without = {"error_message": None, "member_id": "m", "member_epoch": 3, "heartbeat_interval_ms": 5000}
    null_assignment = head + b"\xff" + b"\x00"
    assert (
        bytes(encode_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {**without, "assignment": None}))
        == null_assignment
    )
    topic_id = bytes(16)
    present = (
        head + b"\x01" + b"\x02" + topic_id + b"\x02" + struct.pack(">i", 4) + b"\x00" + b"\x00" + b"\x00"
    )
    assignment = {"topic_partitions": [{"topic_id": topic_id, "partitions": [4]}]}
    assert (
        bytes(encode_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {**without, "assignment": assignment}))
        == present
    )
    assert decode_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, present)["assignment"] == assignment


def test_consumer_group_describe_v1_adds_member_type() -> None:
    member = {
        "member_id": "m",
        "member_epoch": 2,
        "client_id": "c",
        "client_host": "/h",
        "subscribed_topic_names": ["t"],
        "assignment": {"topic_partitions": []},
        "target_assignment": {"topic_partitions": []},
        "member_type": 1,
    }
    group = {
        "group_id": "g",
        "group_state": "Stable",
        "group_epoch": 2,
        "assignment_epoch": 2,
        "members": [member],
    }
    v0 = bytes(encode_response(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"groups": [group]}))
    v1 = bytes(encode_response(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"groups": [group]}))
    assert len(v1) == len(v0) + 1
    assert (
        decode_response(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, v1)["groups"][0]["members"][0]["member_type"] == 1
    )
    assert (
        decode_response(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, v0)["groups"][0]["members"][0]["member_type"] == -1
    )
