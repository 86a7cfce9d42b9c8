"""Checks of the data-plane and admin schema declarations against independent encoders.

For every declared version of every API in this file a deterministic sample message is
built from the declaration (every field present, distinct values, so a swapped pair of
fields changes the bytes), and:

* our codec (``wire.codec``) round-trips it;
* our bytes equal the bytes kafka-python's JSON-driven protocol classes produce for the
  same message, and kafka-python decodes our bytes back to the same values (fields are
  matched by position and tag, not by name, so kafka-python's few renames do not matter;
  names are compared separately with a short list of known renames);
* for the versions kafka-python's older, hand-written ``Struct`` classes cover, their
  bytes equal ours too (an independent transcription of field order and types).

The declaration-only checks (kafka-python's JSON classes vs its hand-written Structs, fed in
our field order) do not go through ``wire.codec``: a failure there points at a declaration's
field order or types, not at the generated codecs.
"""

from __future__ import annotations

import importlib
import itertools
import uuid

# kafka-python's protocol internals are the independent implementation these tests check
# against; the test extra pins the kafka-python release that has them, so a missing one
# fails the import here instead of skipping the cross-check.
import kafka.protocol.api_message as kp_api_message
import kafka.protocol.schemas.fields.codecs as kp_codecs
import pytest
from kafka.protocol.old.types import BitField as KP_OLD_BITFIELD
from kafka.protocol.old.types import Schema as KP_OLD_SCHEMA
from kafka.protocol.old.types import TaggedFields as KP_OLD_TAGGED_FIELDS

from wire import codec as wire_codec
from wire.api_keys import ApiKey
from wire.schema import Api, Field
from wire.schemas import ALL_APIS
from wire.schemas.alter_configs import ALTER_CONFIGS
from wire.schemas.create_partitions import CREATE_PARTITIONS
from wire.schemas.create_topics import CREATE_TOPICS
from wire.schemas.delete_records import DELETE_RECORDS
from wire.schemas.delete_topics import DELETE_TOPICS
from wire.schemas.describe_cluster import DESCRIBE_CLUSTER
from wire.schemas.describe_configs import DESCRIBE_CONFIGS
from wire.schemas.describe_log_dirs import DESCRIBE_LOG_DIRS
from wire.schemas.describe_producers import DESCRIBE_PRODUCERS
from wire.schemas.describe_topic_partitions import DESCRIBE_TOPIC_PARTITIONS
from wire.schemas.fetch import FETCH
from wire.schemas.incremental_alter_configs import INCREMENTAL_ALTER_CONFIGS
from wire.schemas.init_producer_id import INIT_PRODUCER_ID
from wire.schemas.list_offsets import LIST_OFFSETS
from wire.schemas.metadata import METADATA
from wire.schemas.offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH
from wire.schemas.produce import PRODUCE
from wire.schemas.sasl_authenticate import SASL_AUTHENTICATE
from wire.schemas.sasl_handshake import SASL_HANDSHAKE

APIS: list[Api] = [
    PRODUCE,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    OFFSET_FOR_LEADER_EPOCH,
    INIT_PRODUCER_ID,
    CREATE_TOPICS,
    DELETE_TOPICS,
    DELETE_RECORDS,
    CREATE_PARTITIONS,
    DESCRIBE_CONFIGS,
    ALTER_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
    DESCRIBE_CLUSTER,
    DESCRIBE_TOPIC_PARTITIONS,
    DESCRIBE_PRODUCERS,
    DESCRIBE_LOG_DIRS,
    SASL_HANDSHAKE,
    SASL_AUTHENTICATE,
]

# kafka-python's JSON-driven classes rename a few fields (they patch authorized-operation
# ints into bit sets); everything else must carry Kafka's name in snake_case, as ours do.
KP_RENAMES = {
    "topic_authorized_operations": "authorized_operations",
    "cluster_authorized_operations": "authorized_operations",
}

KP_MODULES = ("producer", "consumer", "metadata", "admin", "sasl")


def _kp_classes() -> dict[tuple[int, str], type]:
    found: dict[tuple[int, str], type] = {}
    for name in KP_MODULES:
        module = importlib.import_module(f"kafka.protocol.{name}")
        for attr in dir(module):
            cls = getattr(module, attr)
            if (
                isinstance(cls, type)
                and issubclass(cls, kp_api_message.ApiMessage)
                and cls is not kp_api_message.ApiMessage
            ):
                found[(cls.API_KEY, cls.type)] = cls
    return found


KP_CLASSES = _kp_classes()

# kafka-python's older hand-written Structs: module -> (request list, response list) names.
KP_OLD = {
    0: ("produce", "ProduceRequest", "ProduceResponse"),
    1: ("fetch", "FetchRequest", "FetchResponse"),
    2: ("list_offsets", "ListOffsetsRequest", "ListOffsetsResponse"),
    3: ("metadata", "MetadataRequest", "MetadataResponse"),
    17: ("sasl_handshake", "SaslHandshakeRequest", "SaslHandshakeResponse"),
    19: ("admin", "CreateTopicsRequest", "CreateTopicsResponse"),
    20: ("admin", "DeleteTopicsRequest", "DeleteTopicsResponse"),
    21: ("admin", "DeleteRecordsRequest", "DeleteRecordsResponse"),
    22: ("init_producer_id", "InitProducerIdRequest", "InitProducerIdResponse"),
    23: ("offset_for_leader_epoch", "OffsetForLeaderEpochRequest", "OffsetForLeaderEpochResponse"),
    32: ("admin", "DescribeConfigsRequest", "DescribeConfigsResponse"),
    33: ("admin", "AlterConfigsRequest", "AlterConfigsResponse"),
    35: ("admin", "DescribeLogDirsRequest", "DescribeLogDirsResponse"),
    36: ("sasl_authenticate", "SaslAuthenticateRequest", "SaslAuthenticateResponse"),
    37: ("admin", "CreatePartitionsRequest", "CreatePartitionsResponse"),
}

# Hand-written Structs that disagree with Apache Kafka's schema (bugs in kafka-python):
# DescribeLogDirsRequest_v0 declares ``partitions`` as one Int32, Kafka has ``[]int32``.
KP_OLD_BUGS = {(35, "request", 0)}


def _old_struct(api_key: int, kind: str, version: int):
    """The hand-written kafka-python Struct class for (api, kind, version), or None."""
    if api_key not in KP_OLD:
        return None
    module_name, request_list, response_list = KP_OLD[api_key]
    module = importlib.import_module(f"kafka.protocol.old.{module_name}")
    classes = getattr(module, request_list if kind == "request" else response_list)
    if version >= len(classes):
        return None
    cls = classes[version]
    if (api_key, kind, version) in KP_OLD_BUGS:
        return None
    # Guard against slips in kafka-python's own lists (a request class in a response list).
    if api_key != cls.API_KEY or version != cls.API_VERSION or cls.is_request() != (kind == "request"):
        return None
    return cls


CASES = [
    pytest.param(api, kind, version, id=f"{api.name}-{kind}-v{version}")
    for api in APIS
    for kind in ("request", "response")
    for version in api.versions
]


def _fields(api: Api, kind: str) -> tuple[Field, ...]:
    return api.request if kind == "request" else api.response


# --------------------------------------------------------------------------------------
# Sample messages built from the declarations
# --------------------------------------------------------------------------------------


def _primitive(type_name: str, n: int, name: str):
    if type_name == "bool":
        return True
    if type_name == "int8":
        return 1 + n % 120
    if type_name == "int16":
        return 1000 + n
    if type_name == "uint16":
        return 40000 + n
    if type_name == "int32":
        return 100_000 + n
    if type_name == "int64":
        return 10**12 + n
    if type_name == "float64":
        return n + 0.25
    if type_name == "string":
        return f"{name}-é{n}"
    if type_name == "bytes":
        return bytes([n % 256]) * 3 + b"\x00\xff"
    if type_name == "records":
        return b"RECORDS" + bytes(range(n % 40))
    if type_name == "uuid":
        return uuid.UUID(int=(0xA5 << 120) | n).bytes
    raise AssertionError(type_name)


def sample(
    fields: tuple[Field, ...],
    version: int,
    *,
    nulls: bool = False,
    tagged: bool = True,
    counter: itertools.count | None = None,
) -> dict:
    """A message with every field of ``version`` set to a distinct non-default value.

    ``nulls`` sets every nullable field to None instead; ``tagged=False`` leaves tagged
    fields out (the hand-written Structs know nothing of them).
    """
    counter = counter if counter is not None else itertools.count(1)
    out: dict = {}
    for f in fields:
        if version not in f.versions or (f.tag is not None and not tagged):
            continue
        n = next(counter)
        if nulls and version in f.nullable:
            out[f.name] = None
        elif f.type == "[]":
            out[f.name] = [
                sample(f.fields, version, nulls=nulls, tagged=tagged, counter=counter) for _ in range(2)
            ]
        elif f.type == "{}":
            out[f.name] = sample(f.fields, version, nulls=nulls, tagged=tagged, counter=counter)
        elif f.element_type is not None:
            out[f.name] = [_primitive(f.element_type, n * 10 + i, f.name) for i in range(3)]
        else:
            out[f.name] = _primitive(f.type, n, f.name)
    return out


def project(fields: tuple[Field, ...], version: int, value: dict, *, tagged: bool = True) -> dict:
    """Keep the fields of ``version`` only; records/bytes/uuids as bytes (for comparisons)."""
    out = {}
    for f in fields:
        if version not in f.versions or (f.tag is not None and not tagged):
            continue
        v = value[f.name]
        if v is None:
            out[f.name] = None
        elif f.type == "[]":
            out[f.name] = [project(f.fields, version, item, tagged=tagged) for item in v]
        elif f.type == "{}":
            out[f.name] = project(f.fields, version, v, tagged=tagged)
        elif f.type in ("records", "bytes", "uuid"):
            out[f.name] = bytes(v)
        else:
            out[f.name] = v
    return out


# --------------------------------------------------------------------------------------
# kafka-python JSON-driven classes: fields matched by position (untagged) and tag
# --------------------------------------------------------------------------------------


def _is_bitfield(kp_field) -> bool:
    return getattr(kp_field, "_type", None) is kp_codecs.BitField


def _pair_fields(ours: tuple[Field, ...], kp_struct, version: int):
    """Yield (our field, kafka-python field) pairs for one version, failing on any mismatch."""
    our_untagged = [f for f in ours if version in f.versions and f.tag is None]
    our_tagged = {f.tag: f for f in ours if version in f.versions and f.tag is not None}
    kp_untagged = list(kp_struct.untagged_fields(version))
    kp_tagged = {
        f.tag: f for f in kp_struct._fields if f.for_version_q(version) and f.tagged_field_q(version)
    }
    assert len(our_untagged) == len(kp_untagged), (
        f"v{version}: {[f.name for f in our_untagged]} vs {[f.name for f in kp_untagged]}"
    )
    assert sorted(our_tagged) == sorted(kp_tagged), (
        f"v{version}: tags {sorted(our_tagged)} vs {sorted(kp_tagged)}"
    )
    yield from zip(our_untagged, kp_untagged, strict=True)
    for tag in sorted(our_tagged):
        yield our_tagged[tag], kp_tagged[tag]


def to_kp(ours: tuple[Field, ...], kp_struct, version: int, value: dict) -> dict:
    out = {}
    for f, k in _pair_fields(ours, kp_struct, version):
        v = value.get(f.name, f.default_value())
        if v is None:
            out[k.name] = None
        elif f.type == "[]":
            out[k.name] = [to_kp(f.fields, k, version, item) for item in v]
        elif f.type == "{}":
            out[k.name] = to_kp(f.fields, k, version, v)
        elif f.type == "uuid":
            out[k.name] = uuid.UUID(bytes=bytes(v))
        elif _is_bitfield(k):
            bits = {b for b in range(32) if (v & 0xFFFFFFFF) >> b & 1}
            out[k.name] = None if bits == {31} else bits
        else:
            out[k.name] = v
    return out


def from_kp(ours: tuple[Field, ...], kp_struct, version: int, value) -> dict:
    out = {}
    for f, k in _pair_fields(ours, kp_struct, version):
        v = getattr(value, k.name)
        if f.type == "[]":
            out[f.name] = None if v is None else [from_kp(f.fields, k, version, item) for item in v]
        elif f.type == "{}":
            # kafka-python leaves an absent tagged struct as None; ours is all defaults
            out[f.name] = None if v is None else from_kp(f.fields, k, version, v)
        elif f.type == "uuid":
            out[f.name] = bytes(16) if v is None else v.bytes
        elif _is_bitfield(k):
            i = sum(1 << b for b in ({31} if v is None else v))
            out[f.name] = i - (1 << 32) if i >= 1 << 31 else i
        elif f.type in ("records", "bytes") and v is not None:
            out[f.name] = bytes(v)
        else:
            out[f.name] = v
    return out


def kp_encode(api: Api, kind: str, version: int, body: dict) -> bytes:
    cls = KP_CLASSES[(api.key, kind)]
    flexible = version in api.flexible
    return bytes(
        cls._struct.encode(
            to_kp(_fields(api, kind), cls._struct, version, body),
            version=version,
            compact=flexible,
            tagged=flexible,
        )
    )


def kp_decode(api: Api, kind: str, version: int, data: bytes) -> dict:
    cls = KP_CLASSES[(api.key, kind)]
    decoded = cls.decode(data, version=version)
    return from_kp(_fields(api, kind), cls._struct, version, decoded)


def _names(ours: tuple[Field, ...], kp_struct, version: int, path: str):
    for f, k in _pair_fields(ours, kp_struct, version):
        if f.name != k.name and KP_RENAMES.get(f.name) != k.name:
            yield f"{path}{f.name} (kafka-python: {k.name})"
        if f.type in ("[]", "{}"):
            yield from _names(f.fields, k, version, f"{path}{f.name}.")


# --------------------------------------------------------------------------------------
# kafka-python hand-written Structs: positional tuples in our field order
# --------------------------------------------------------------------------------------


def to_positional(ours: tuple[Field, ...], schema, version: int, value: dict):
    """Our message as the positional tuples a hand-written Struct encodes, in OUR field order.

    Wire-equivalent shapes kafka-python uses are accepted: a one-field struct flattened to
    its value (Metadata v0's ``topics`` is ``Array(String)``) and a nested, non-array
    ``Schema`` spliced inline (CreatePartitions v0-1's ``new_partitions``).
    """
    if not isinstance(schema, KP_OLD_SCHEMA):
        (only,) = [f for f in ours if version in f.versions]
        return _positional_value(only, schema, version, value[only.name])
    our_fields = [f for f in ours if version in f.versions and f.tag is None]
    it = iter(our_fields)
    out = _fill(schema, it, version, value)
    leftover = list(it)
    assert not leftover, f"v{version}: fields {[f.name for f in leftover]} missing in the kafka-python Struct"
    return out


def _fill(schema, it, version: int, value: dict) -> tuple:
    out = []
    for kp_type in schema.fields:
        if kp_type is KP_OLD_TAGGED_FIELDS:
            out.append({})
            continue
        f = next(it, None)
        assert f is not None, f"v{version}: the kafka-python Struct has more fields than ours"
        if isinstance(kp_type, KP_OLD_SCHEMA) and f.type != "{}":
            # spliced struct: its fields continue our flat field sequence
            out.append(_fill(kp_type, itertools.chain([f], it), version, value))
            continue
        out.append(_positional_value(f, kp_type, version, value[f.name]))
    return tuple(out)


def _positional_value(f: Field, kp_type, version: int, v):
    if v is None:
        return None
    if f.type == "[]":
        return [to_positional(f.fields, kp_type.array_of, version, item) for item in v]
    if f.type == "{}":
        return to_positional(f.fields, kp_type, version, v)
    if f.type == "uuid":
        return uuid.UUID(bytes=bytes(v))
    if kp_type is KP_OLD_BITFIELD:
        return {b for b in range(32) if (v & 0xFFFFFFFF) >> b & 1}
    return v


def old_encode(cls, api: Api, kind: str, version: int, body: dict) -> bytes:
    return bytes(cls.SCHEMA.encode(to_positional(_fields(api, kind), cls.SCHEMA, version, body)))


# --------------------------------------------------------------------------------------
# Declaration-only checks (no codec needed)
# --------------------------------------------------------------------------------------


def test_registered_in_all_apis():
    for a in APIS:
        assert ALL_APIS[a.key] is a


@pytest.mark.parametrize(("api", "kind", "version"), CASES)
def test_names_match_kafka_python(api, kind, version):
    cls = KP_CLASSES[(api.key, kind)]
    assert cls.max_version >= version
    assert cls.flexible_version_q(version) == (version in api.flexible)
    assert list(_names(_fields(api, kind), cls._struct, version, "")) == []


# The versions kafka-python also has a hand-written Struct for.
OLD_STRUCT_CASES = [case for case in CASES if _old_struct(case.values[0].key, *case.values[1:]) is not None]


@pytest.mark.parametrize(("api", "kind", "version"), OLD_STRUCT_CASES)
def test_old_structs_agree_with_our_field_order(api, kind, version):
    """kafka-python's hand-written Struct, fed in our field order, encodes like its JSON codec."""
    cls = _old_struct(api.key, kind, version)
    body = sample(_fields(api, kind), version, tagged=False)
    assert old_encode(cls, api, kind, version, body) == kp_encode(api, kind, version, body)


# --------------------------------------------------------------------------------------
# Codec checks
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def codec():
    return wire_codec


def _encode(codec, api: Api, kind: str, version: int, body: dict) -> bytes:
    fn = codec.encode_request if kind == "request" else codec.encode_response
    return bytes(fn(api.key, version, body))


def _decode(codec, api: Api, kind: str, version: int, data: bytes) -> dict:
    fn = codec.decode_request if kind == "request" else codec.decode_response
    return fn(api.key, version, data)


@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
@pytest.mark.parametrize(("api", "kind", "version"), CASES)
def test_round_trip_and_kafka_python(codec, api, kind, version, nulls):
    fields = _fields(api, kind)
    body = sample(fields, version, nulls=nulls)
    data = _encode(codec, api, kind, version, body)
    assert project(fields, version, _decode(codec, api, kind, version, data)) == project(
        fields, version, body
    )
    assert data == kp_encode(api, kind, version, body)
    assert kp_decode(api, kind, version, data) == project(fields, version, body)


@pytest.mark.parametrize(("api", "kind", "version"), OLD_STRUCT_CASES)
def test_old_structs_bytes(codec, api, kind, version):
    cls = _old_struct(api.key, kind, version)
    fields = _fields(api, kind)
    body = sample(fields, version, tagged=False)
    data = old_encode(cls, api, kind, version, body)
    assert data == _encode(codec, api, kind, version, body)
    assert project(fields, version, _decode(codec, api, kind, version, data)) == project(
        fields, version, body
    )


# --------------------------------------------------------------------------------------
# Realistic messages, written out by hand
# --------------------------------------------------------------------------------------


def _record_batch(*values: bytes, producer_id: int = 4000, base_sequence: int = 0) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=base_sequence,
        batch_size=1 << 20,
    )
    for offset, value in enumerate(values):
        builder.append(offset, timestamp=1_700_000_000_000 + offset, key=None, value=value, headers=[])
    return bytes(builder.build())


def test_produce_v3_request_from_hand_written_struct(codec):
    from kafka.protocol.old.produce import ProduceRequest_v3

    batch = _record_batch(b"hello", b"world")
    request = ProduceRequest_v3(None, -1, 30000, [("events", [(0, batch), (2, None)])])
    data = request.encode()
    decoded = codec.decode_request(ApiKey.PRODUCE, 3, data)
    assert decoded["transactional_id"] is None
    assert (decoded["acks"], decoded["timeout_ms"]) == (-1, 30000)
    [topic] = decoded["topic_data"]
    assert topic["name"] == "events"
    first, second = topic["partition_data"]
    assert first["index"] == 0
    assert isinstance(first["records"], memoryview)
    assert bytes(first["records"]) == batch
    assert second == {"index": 2, "records": None}
    assert codec.encode_request(ApiKey.PRODUCE, 3, decoded) == data


def test_produce_v9_request_from_kafka_python(codec):
    from kafka.protocol.producer import ProduceRequest

    batch = _record_batch(b"x" * 300)
    request = ProduceRequest(
        transactional_id="txn-1",
        acks=1,
        timeout_ms=1500,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t",
                partition_data=[ProduceRequest.TopicProduceData.PartitionProduceData(index=5, records=batch)],
            )
        ],
        version=9,
    )
    decoded = codec.decode_request(ApiKey.PRODUCE, 9, request.encode())
    assert decoded["transactional_id"] == "txn-1"
    assert decoded["acks"] == 1
    partition = decoded["topic_data"][0]["partition_data"][0]
    assert partition["index"] == 5
    assert bytes(partition["records"]) == batch


def test_produce_v12_not_leader_response_read_by_kafka_python(codec):
    from kafka.protocol.producer import ProduceResponse

    body = {
        "responses": [
            {
                "name": "events",
                "partition_responses": [
                    {
                        "index": 0,
                        "error_code": 6,  # NOT_LEADER_OR_FOLLOWER
                        "base_offset": -1,
                        "current_leader": {"leader_id": 2, "leader_epoch": 7},
                    },
                    {"index": 1, "error_code": 0, "base_offset": 42, "log_start_offset": 0},
                ],
            }
        ],
        "node_endpoints": [{"node_id": 2, "host": "broker-2", "port": 9092, "rack": None}],
    }
    response = ProduceResponse.decode(codec.encode_response(ApiKey.PRODUCE, 12, body), version=12)
    failed, ok = response.responses[0].partition_responses
    assert (failed.error_code, failed.current_leader.leader_id, failed.current_leader.leader_epoch) == (
        6,
        2,
        7,
    )
    assert failed.log_append_time_ms == -1 and failed.error_message is None
    assert (ok.base_offset, ok.log_start_offset, ok.record_errors) == (42, 0, [])
    assert [(n.node_id, n.host, n.port, n.rack) for n in response.node_endpoints] == [
        (2, "broker-2", 9092, None)
    ]


def test_fetch_v4_response_read_by_hand_written_struct(codec):
    from kafka.protocol.old.fetch import FetchResponse_v4

    batch = _record_batch(b"a", b"b", b"c")
    body = {
        "responses": [
            {
                "topic": "events",
                "partitions": [
                    {
                        "partition_index": 0,
                        "high_watermark": 3,
                        "last_stable_offset": 3,
                        "aborted_transactions": None,
                        "records": memoryview(batch),
                    },
                    {"partition_index": 1, "error_code": 1, "high_watermark": -1, "records": None},
                ],
            }
        ]
    }
    decoded = FetchResponse_v4.decode(codec.encode_response(ApiKey.FETCH, 4, body))
    assert decoded.throttle_time_ms == 0
    [(topic, partitions)] = decoded.responses
    assert topic == "events"
    assert partitions[0] == (0, 0, 3, 3, None, batch)
    assert partitions[1] == (1, 1, -1, -1, [], None)


def test_fetch_v15_consumer_request_from_kafka_python(codec):
    from kafka.protocol.consumer import FetchRequest

    topic_id = uuid.UUID("a1b2c3d4-0000-4000-8000-000000000001")
    request = FetchRequest(
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=52428800,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic_id=topic_id,
                partitions=[
                    FetchRequest.FetchTopic.FetchPartition(
                        partition=0,
                        current_leader_epoch=3,
                        fetch_offset=100,
                        log_start_offset=-1,
                        partition_max_bytes=1048576,
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
        version=15,
    )
    decoded = codec.decode_request(ApiKey.FETCH, 15, request.encode())
    assert decoded["cluster_id"] is None
    assert decoded["replica_state"] == {"replica_id": -1, "replica_epoch": -1}
    assert (decoded["max_wait_ms"], decoded["min_bytes"], decoded["isolation_level"]) == (500, 1, 1)
    [topic] = decoded["topics"]
    assert bytes(topic["topic_id"]) == topic_id.bytes
    [partition] = topic["partitions"]
    assert partition["fetch_offset"] == 100
    assert partition["current_leader_epoch"] == 3
    assert partition["last_fetched_epoch"] == -1


def test_fetch_v12_absent_tagged_fields_decode_to_kafka_defaults(codec):
    body = {"responses": [{"topic": "t", "partitions": [{"partition_index": 0, "records": b""}]}]}
    data = codec.encode_response(ApiKey.FETCH, 12, body)
    partition = codec.decode_response(ApiKey.FETCH, 12, data)["responses"][0]["partitions"][0]
    assert partition["diverging_epoch"] == {"epoch": -1, "end_offset": -1}
    assert partition["current_leader"] == {"leader_id": -1, "leader_epoch": -1}
    assert partition["snapshot_id"] == {"end_offset": -1, "epoch": -1}
    assert partition["preferred_read_replica"] == -1
    assert partition["log_start_offset"] == -1


@pytest.mark.parametrize("version", [1, 4, 9, 12])
def test_metadata_null_topics_means_all(codec, version):
    from kafka.protocol.metadata import MetadataRequest

    data = codec.encode_request(ApiKey.METADATA, version, {"topics": None})
    assert codec.decode_request(ApiKey.METADATA, version, data)["topics"] is None
    assert MetadataRequest.decode(data, version=version).topics is None


def test_metadata_v0_request_is_a_list_of_names(codec):
    from kafka.protocol.old.metadata import MetadataRequest_v0

    data = MetadataRequest_v0(["a", "b"]).encode()
    decoded = codec.decode_request(ApiKey.METADATA, 0, data)
    assert project(METADATA.request, 0, decoded) == {"topics": [{"name": "a"}, {"name": "b"}]}
    # v0 has no null array: an empty list asks for all topics
    assert codec.encode_request(ApiKey.METADATA, 0, {"topics": []}) == MetadataRequest_v0([]).encode()


def test_metadata_v13_response_read_by_kafka_python(codec):
    from kafka.protocol.metadata import MetadataResponse

    topic_id = uuid.UUID("00000000-0000-4000-8000-0000000000aa")
    body = {
        "brokers": [{"node_id": 1, "host": "localhost", "port": 9092, "rack": None}],
        "cluster_id": "odradek-cluster",
        "controller_id": 1,
        "topics": [
            {
                "name": "events",
                "topic_id": topic_id.bytes,
                "partitions": [
                    {
                        "partition_index": 0,
                        "leader_id": 1,
                        "leader_epoch": 0,
                        "replica_nodes": [1],
                        "isr_nodes": [1],
                    }
                ],
            }
        ],
        "error_code": 0,
    }
    response = MetadataResponse.decode(codec.encode_response(ApiKey.METADATA, 13, body), version=13)
    assert response.cluster_id == "odradek-cluster"
    assert response.brokers[0].host == "localhost"
    [topic] = response.topics
    assert (topic.name, topic.topic_id, topic.is_internal) == ("events", topic_id, False)
    [partition] = topic.partitions
    assert (partition.leader_id, partition.leader_epoch, partition.isr_nodes) == (1, 0, [1])
    assert response.error_code == 0
    assert topic.authorized_operations is None  # INT32_MIN: not requested


def test_describe_topic_partitions_cursor_is_a_nullable_struct(codec):
    data = codec.encode_request(
        ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {"topics": [{"name": "a"}], "cursor": None}
    )
    assert codec.decode_request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, data)["cursor"] is None
    data = codec.encode_request(
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        0,
        {"topics": [], "cursor": {"topic_name": "a", "partition_index": 7}},
    )
    decoded = codec.decode_request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, data)
    assert decoded["cursor"] == {"topic_name": "a", "partition_index": 7}
    assert decoded["response_partition_limit"] == 2000
