"""DescribeQuorum, UpdateFeatures and reassignment answers the tools never provoke (the tools'
own scenarios are in ``compat_tests/test_kafka_tools.py``)."""

from __future__ import annotations

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


def test_only_the_metadata_partition_has_a_quorum(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        asked = [
            {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 1}]},
            {"topic_name": "clicks", "partitions": [{"partition_index": 0}]},
        ]
        for topic in asked:
            answer = client.request(ApiKey.DESCRIBE_QUORUM, 2, {"topics": [topic]})
            (partition,) = answer["topics"][0]["partitions"]
            assert partition["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, answer


def test_feature_levels_do_not_change(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        updates = [
            {"feature": "group.version", "max_version_level": 1, "upgrade_type": 1},
            {"feature": "transaction.version", "max_version_level": 2, "upgrade_type": 1},
        ]
        answer = client.request(
            ApiKey.UPDATE_FEATURES, 1, {"feature_updates": updates, "validate_only": False}
        )
        assert [r["error_code"] for r in answer["results"]] == [
            ErrorCode.NONE,
            ErrorCode.INVALID_UPDATE_VERSION,
        ]
        assert answer["error_code"] == ErrorCode.NONE  # v1 answers per feature
        answer = client.request(
            ApiKey.UPDATE_FEATURES, 2, {"feature_updates": updates, "validate_only": False}
        )
        assert answer["error_code"] == ErrorCode.INVALID_UPDATE_VERSION
        assert "transaction.version" in answer["error_message"]
        versions = client.request(
            ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
        assert [(f["name"], f["max_version_level"]) for f in versions["finalized_features"]] == [
            ("group.version", 1),
            ("share.version", 1),
            ("streams.version", 1),
        ]


def test_a_reassignment_can_only_name_this_node(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("placed")
        partitions = [
            {"partition_index": 0, "replicas": [2]},
            {"partition_index": 0, "replicas": [1, 1]},
            {"partition_index": 0, "replicas": [1]},
            {"partition_index": 9, "replicas": [1]},
        ]
        answer = client.request(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            1,
            {
                "topics": [{"name": "placed", "partitions": partitions}],
                "allow_replication_factor_change": True,
            },
        )
        assert [p["error_code"] for p in answer["responses"][0]["partitions"]] == [
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ErrorCode.NONE,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ]
        listed = client.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"topics": None})
        assert listed["topics"] == []
