"""Known-answer tests: hand-computed bytes for real and sample messages, and error cases.

The property tests show the codecs agree with themselves; these pin the bytes to Kafka's
wire format (computed by hand from the protocol guide) and check the behaviour at the
edges: nulls, tagged fields, zero-copy records, hostile lengths, unknown versions.
"""

from __future__ import annotations

import time

import pytest

from wire import codec
from wire.api_keys import ApiKey
from wire.errors import DecodeError, EncodeError, UnsupportedVersion
from wire.schema import F, api
from wire.schemas import ALL_APIS

# A made-up schema covering what the real declarations may not: every nullable kind, a
# nullable struct, tagged fields in a nested struct and an array element, uuid, float64.  It
# borrows the key of Envelope, a controller-only API no broker schema here declares.
SAMPLE_REQUEST = (
    F("id", "uuid"),
    F("name", "string", nullable="0+"),
    F("ids", "[]int32"),
    F("blob", "bytes", nullable="0+"),
    F("ratio", "float64"),
    F("port", "uint16"),
    F(
        "leader",
        "{}",
        "0+",
        F("broker", "int32"),
        F("rack", "string", "1+", nullable="1+", tag=0, default=None),
        nullable="0+",
    ),
    F("records", "records", nullable="0+"),
    F(
        "topics",
        "[]",
        "0+",
        F("name", "string"),
        F("partitions", "[]int32"),
        F("note", "string", "1+", tag=3),
    ),
    F("added", "int64", "1+", default=-1),
)
SAMPLE = api(
    ApiKey.ENVELOPE, "0-1", flexible="1+", request=SAMPLE_REQUEST, response=(F("error_code", "int16"),)
)
SAMPLE_MESSAGE = {
    "id": bytes(range(16)),
    "name": None,
    "ids": [1, 2],
    "blob": b"\xab",
    "ratio": 1.5,
    "port": 65535,
    "leader": None,
    "records": b"RECS",
    "topics": [{"name": "t", "partitions": [], "note": ""}],
}
SAMPLE_V0 = bytes.fromhex(
    "000102030405060708090a0b0c0d0e0f"  # id
    "ffff"  # name: null
    "00000002" "00000001" "00000002"  # ids
    "00000001" "ab"  # blob
    "3ff8000000000000"  # ratio 1.5
    "ffff"  # port
    "ff"  # leader: null struct
    "00000004" "52454353"  # records
    "00000001" "0001" "74" "00000000"  # topics: [{name "t", partitions []}]
)  # fmt: skip
SAMPLE_V1 = bytes.fromhex(
    "000102030405060708090a0b0c0d0e0f"  # id
    "00"  # name: null
    "03" "00000001" "00000002"  # ids
    "02" "ab"  # blob
    "3ff8000000000000"  # ratio
    "ffff"  # port
    "01" "00000007" "01" "00" "03" "03" "7231"  # leader {broker 7, tag 0 rack "r1"}
    "05" "52454353"  # records
    "02" "02" "74" "01" "01" "03" "02" "02" "6e"  # topics [{name "t", [], tag 3 note "n"}]
    "ffffffffffffffff"  # added
    "00"  # no top-level tagged fields
)  # fmt: skip


@pytest.fixture
def sample():
    """Register the sample API for one test, so it goes through the public functions."""
    ALL_APIS[SAMPLE.key] = SAMPLE
    yield SAMPLE.key
    del ALL_APIS[SAMPLE.key]
    codec.get_codec.cache_clear()


def _sample_v1_message() -> dict:
    message = dict(SAMPLE_MESSAGE, leader={"broker": 7, "rack": "r1"}, added=-1)
    message["topics"] = [{"name": "t", "partitions": [], "note": "n"}]
    return message


def test_api_versions_v3_request_bytes() -> None:
    body = {"client_software_name": "apache-kafka-java", "client_software_version": "3.7.0"}
    expected = b"\x12apache-kafka-java" + b"\x063.7.0" + b"\x00"
    assert codec.encode_request(ApiKey.API_VERSIONS, 3, body) == expected
    assert codec.decode_request(ApiKey.API_VERSIONS, 3, expected) == body


def test_api_versions_v0_request_is_empty() -> None:
    assert codec.encode_request(ApiKey.API_VERSIONS, 0, {}) == b""
    assert codec.decode_request(ApiKey.API_VERSIONS, 0, b"") == {
        "client_software_name": "",
        "client_software_version": "",
    }


def test_api_versions_v0_response_bytes() -> None:
    body = {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]}
    expected = bytes.fromhex("0023" "00000001" "0012" "0000" "0004")  # fmt: skip
    assert codec.encode_response(ApiKey.API_VERSIONS, 0, body) == expected
    decoded = codec.decode_response(ApiKey.API_VERSIONS, 0, expected)
    assert decoded["api_keys"] == body["api_keys"]
    assert decoded["throttle_time_ms"] == 0  # not in v0: filled with its default
    assert decoded["finalized_features_epoch"] == -1


API_VERSIONS_V3_RESPONSE = bytes.fromhex(
    "0000"  # error_code
    "02" "0012" "0000" "0004" "00"  # api_keys: [{18, 0, 4}], element tagged fields
    "00000000"  # throttle_time_ms
    "02"  # two tagged fields
    "00" "08" "02" "02" "78" "0001" "0002" "00"  # tag 0 supported_features [{"x", 1, 2}]
    "01" "08" "0000000000000007"  # tag 1 finalized_features_epoch = 7
)  # fmt: skip


def test_flexible_array_with_tagged_fields_bytes() -> None:
    body = {
        "error_code": 0,
        "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}],
        "supported_features": [{"name": "x", "min_version": 1, "max_version": 2}],
        "finalized_features_epoch": 7,
        "finalized_features": [],  # equal to the default: not written
    }
    assert codec.encode_response(ApiKey.API_VERSIONS, 3, body) == API_VERSIONS_V3_RESPONSE
    decoded = codec.decode_response(ApiKey.API_VERSIONS, 3, API_VERSIONS_V3_RESPONSE)
    assert decoded == {**body, "throttle_time_ms": 0, "zk_migration_ready": False}


def test_unknown_tagged_fields_are_skipped() -> None:
    # Same message with an extra tag 9 (3 bytes) appended to the top-level section.
    data = bytearray(API_VERSIONS_V3_RESPONSE)
    data[data.index(b"\x02\x00\x08")] = 3
    data += b"\x09\x03abc"
    decoded = codec.decode_response(ApiKey.API_VERSIONS, 3, bytes(data))
    assert decoded["finalized_features_epoch"] == 7


def test_tagged_field_overrunning_its_size_is_an_error() -> None:
    data = API_VERSIONS_V3_RESPONSE.replace(b"\x01\x08\x00\x00", b"\x01\x04\x00\x00")
    with pytest.raises(DecodeError):
        codec.decode_response(ApiKey.API_VERSIONS, 3, data)


@pytest.mark.parametrize(
    ("version", "message", "expected"), [(0, SAMPLE_MESSAGE, SAMPLE_V0), (1, None, SAMPLE_V1)]
)
def test_sample_bytes(sample: int, version: int, message: dict | None, expected: bytes) -> None:
    message = message or _sample_v1_message()
    assert codec.encode_request(sample, version, message) == expected
    _, end = codec.get_codec(sample, version, "request").decode(memoryview(expected), 0)
    assert end == len(expected)
    assert codec.decode_request(sample, version, expected) == {"added": -1, **message}


def test_nested_absent_fields_get_defaults(sample: int) -> None:
    assert codec.decode_request(sample, 0, SAMPLE_V0)["topics"][0]["note"] == ""
    assert codec.decode_request(sample, 1, SAMPLE_V1)["leader"] == {"broker": 7, "rack": "r1"}


def test_records_are_zero_copy_slices(sample: int) -> None:
    buffer = bytearray(b"\xee" * 3 + SAMPLE_V1)
    records = codec.decode_request(sample, 1, buffer, 3)["records"]
    assert isinstance(records, memoryview)
    assert records == b"RECS"
    buffer[buffer.index(b"RECS")] = ord("X")
    assert records == b"XECS"


@pytest.mark.parametrize("version", [3, 9])
def test_produce_records_are_not_copied(version: int) -> None:
    batch = bytes(4 << 20)  # a 4 MiB record set, as a big producer sends it
    body = {"acks": -1, "timeout_ms": 30000, "topic_data": [{"name": "t", "partition_data": []}]}
    body["topic_data"][0]["partition_data"] = [{"index": 0, "records": batch}]
    frame = codec.encode_request(ApiKey.PRODUCE, version, body)
    records = codec.decode_request(ApiKey.PRODUCE, version, frame)["topic_data"][0]["partition_data"][0][
        "records"
    ]
    assert records.obj is frame
    assert records.nbytes == len(batch)


def test_trailing_bytes_after_a_body_are_ignored() -> None:
    body = {"client_software_name": "a", "client_software_version": "b"}
    encoded = codec.encode_request(ApiKey.API_VERSIONS, 3, body)
    assert codec.decode_request(ApiKey.API_VERSIONS, 3, encoded + b"future fields") == body


def test_decode_from_offset() -> None:
    body = {"client_software_name": "a", "client_software_version": "b"}
    encoded = codec.encode_request(ApiKey.API_VERSIONS, 3, body)
    assert codec.decode_request(ApiKey.API_VERSIONS, 3, b"hdr" + encoded, 3) == body


def test_huge_array_count_fails_fast() -> None:
    data = bytes.fromhex("0000" "7fffffff" "0012")  # fmt: skip
    start = time.perf_counter()
    with pytest.raises(DecodeError):
        codec.decode_response(ApiKey.API_VERSIONS, 0, data)
    assert time.perf_counter() - start < 0.5


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\x05ab\x01\x00", id="string-past-end"),
        pytest.param(b"\x00\x01\x00", id="null-in-non-nullable"),
        pytest.param(b"\x03\xff\xfe\x01\x00", id="invalid-utf8"),
        pytest.param(b"\xff\xff\xff\xff\xff\x01", id="varint-too-long"),
        pytest.param(b"\x01\x01\x05\x09\x80", id="tagged-field-past-end"),
        pytest.param(b"\x01\x01\xff\xff\xff\xff\x0f", id="tag-count-too-large"),
    ],
)
def test_malformed_flexible_input(data: bytes) -> None:
    with pytest.raises(DecodeError):
        codec.decode_request(ApiKey.API_VERSIONS, 3, data)


def test_unknown_api_or_version() -> None:
    with pytest.raises(UnsupportedVersion):
        codec.decode_request(9999, 0, b"")
    with pytest.raises(UnsupportedVersion):
        codec.encode_response(ApiKey.API_VERSIONS, 99, {})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("id", b"short", id="uuid-length"),
        pytest.param("ids", None, id="null-array"),
        pytest.param("port", 70000, id="uint16-range"),
        pytest.param("ratio", "x", id="float-type"),
        pytest.param("topics", [{"name": None}], id="null-string"),
        pytest.param("topics", [{"name": "x" * 40000}], id="long-string"),
    ],
)
def test_unencodable_values(sample: int, field: str, value: object) -> None:
    with pytest.raises(EncodeError):
        codec.encode_request(sample, 0, dict(SAMPLE_MESSAGE, **{field: value}))


def test_public_encode_wraps_errors() -> None:
    with pytest.raises(EncodeError, match="ApiVersions v0 response"):
        codec.encode_response(ApiKey.API_VERSIONS, 0, {"error_code": 1 << 20})


def test_prepare_all_generates_every_codec() -> None:
    assert codec.prepare_all() >= 2 * 5  # ApiVersions 0-4, both directions, at least
