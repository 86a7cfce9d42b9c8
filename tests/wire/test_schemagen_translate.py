"""The spec translation rules, on small specs written in Kafka's format."""

from __future__ import annotations

import pytest

from wire.api_keys import ApiKey
from wire.codegen import generate
from wire.schema import MISSING, Versions
from wire.schemagen.specs import parse_spec
from wire.schemagen.translate import SpecError, snake_case, stable_versions, translate_api

REQUEST = """
// A comment line, as every spec file starts with its licence.
{
  "apiKey": 25, "type": "request", "listeners": ["broker"], "name": "AddOffsetsToTxnRequest",
  // Version 2 is unstable.
  "validVersions": "0-2", "flexibleVersions": "1+", "latestVersionUnstable": true,
  "fields": [
    { "name": "TransactionalId", "type": "string", "versions": "0+", "about": "x" },
    { "name": "ProducerEpoch", "type": "int16", "versions": "0+", "default": "-1", "about": "x" },
    { "name": "Mask", "type": "int32", "versions": "0+", "default": "0x7fffffff", "about": "x" },
    { "name": "Topics", "type": "[]TopicData", "versions": "0+", "about": "x" },
    { "name": "Leader", "type": "LeaderIdAndEpoch", "versions": "1+", "taggedVersions": "1+",
      "tag": 0, "nullableVersions": "1+", "default": "null", "about": "x", "fields": [
      { "name": "LeaderId", "type": "int32", "versions": "1+", "about": "x" }
    ]}
  ],
  "commonStructs": [
    { "name": "TopicData", "versions": "0+", "fields": [
      { "name": "Name", "type": "string", "versions": "0+", "about": "x" },
      { "name": "PartitionIndexes", "type": "[]int32", "versions": "0+", "about": "x" },
      { "name": "IsKRaft", "type": "bool", "versions": "1+", "default": "true", "about": "x" }
    ]}
  ]
}
"""

RESPONSE = """
{
  "apiKey": 25, "type": "response", "name": "AddOffsetsToTxnResponse",
  "validVersions": "0-2", "flexibleVersions": "1+",
  "fields": [
    { "name": "ErrorMessage", "type": "string", "versions": "0+", "nullableVersions": "0+",
      "default": "null", "about": "x" }
  ]
}
"""


def declaration():
    request = parse_spec(REQUEST)
    return translate_api(request, parse_spec(RESPONSE), stable_versions(request))


@pytest.mark.parametrize(
    ("kafka", "ours"),
    [
        ("PartitionIndex", "partition_index"),
        ("TopicId", "topic_id"),
        ("IsKRaft", "is_k_raft"),
        ("Acks", "acks"),
    ],
)
def test_field_names_are_snake_case(kafka: str, ours: str) -> None:
    assert snake_case(kafka) == ours


def test_an_unstable_latest_version_is_not_declared() -> None:
    api = declaration()
    assert api.key is ApiKey.ADD_OFFSETS_TO_TXN
    assert api.versions == Versions(0, 1)
    assert api.flexible == Versions(1, None)


def test_fields_types_defaults_and_common_structs() -> None:
    transactional_id, epoch, mask, topics, leader = declaration().request
    assert (transactional_id.name, transactional_id.type, transactional_id.default) == (
        "transactional_id",
        "string",
        MISSING,
    )
    assert epoch.default == -1
    assert mask.default == 0x7FFFFFFF
    assert topics.type == "[]"
    assert [f.name for f in topics.fields] == ["name", "partition_indexes", "is_k_raft"]
    assert topics.fields[1].type == "[]int32"
    assert topics.fields[2].default is True
    assert (leader.type, leader.tag, leader.default, leader.nullable) == ("{}", 0, None, Versions(1, None))
    (error_message,) = declaration().response
    assert error_message.default is None


def test_translated_declaration_round_trips_through_generated_codecs() -> None:
    api = declaration()
    message = {
        "transactional_id": "tx",
        "producer_epoch": 3,
        "mask": 7,
        "topics": [{"name": "t", "partition_indexes": [0, 2], "is_k_raft": False}],
        "leader": {"leader_id": 4},
    }
    codec = generate(api, 1, "request")
    data = codec.encode(message)
    assert codec.decode(memoryview(data), 0) == (message, len(data))


def test_a_null_default_on_a_never_nullable_field_is_refused() -> None:
    request = parse_spec(REQUEST)
    request["fields"][0]["default"] = "null"
    with pytest.raises(SpecError, match="never nullable"):
        translate_api(request, parse_spec(RESPONSE), stable_versions(request))
