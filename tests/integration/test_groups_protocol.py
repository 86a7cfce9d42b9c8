"""Exact-byte checks of group APIs that stock clients exercise only partially."""

from __future__ import annotations

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient
from tests.integration.test_groups_errors import commit
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


def test_offset_fetch_v8_answers_several_groups_at_once(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("multi", 2)
        assert commit(client, "first", "multi", 0) == ErrorCode.NONE
        assert commit(client, "second", "multi", 1) == ErrorCode.NONE
        response = client.request(
            ApiKey.OFFSET_FETCH,
            8,
            {
                "groups": [
                    {"group_id": "first", "topics": [{"name": "multi", "partition_indexes": [0, 1]}]},
                    {"group_id": "second", "topics": None},
                    {"group_id": "nobody", "topics": None},
                ],
                "require_stable": True,
            },
        )
        by_group = {
            g["group_id"]: {
                (t["name"], p["partition_index"]): p["committed_offset"]
                for t in g["topics"]
                for p in t["partitions"]
            }
            for g in response["groups"]
        }
        assert by_group == {
            "first": {("multi", 0): 5, ("multi", 1): -1},
            "second": {("multi", 1): 5},
            "nobody": {},
        }
        assert {g["error_code"] for g in response["groups"]} == {ErrorCode.NONE}


def test_consumer_offsets_is_an_internal_topic_once_used(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("used", 1)
        assert commit(client, "g", "used", 0) == ErrorCode.NONE
        response = client.request(
            ApiKey.METADATA,
            12,
            {
                "topics": None,
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        topics = {t["name"]: t for t in response["topics"]}
        assert topics["__consumer_offsets"]["is_internal"] is True
        assert len(topics["__consumer_offsets"]["partitions"]) == 50
        assert topics["used"]["is_internal"] is False


def test_find_coordinator_batches_keys(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        response = client.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["a", "b"]})
        assert [(c["key"], c["error_code"], c["port"]) for c in response["coordinators"]] == [
            ("a", ErrorCode.NONE, odradek_broker.port),
            ("b", ErrorCode.NONE, odradek_broker.port),
        ]
        old = client.request(ApiKey.FIND_COORDINATOR, 1, {"key": "a", "key_type": 0})
        assert (old["error_code"], old["node_id"], old["port"]) == (ErrorCode.NONE, 1, odradek_broker.port)
