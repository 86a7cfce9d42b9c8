"""Partition-count limits: one hostile count must not stall the broker or brick its restarts.

A CreateTopics with 1,000,000 partitions or a CreatePartitions to 8,388,611 (3 with one flipped
bit) used to block the event loop for half a minute, write the count to the topic registry
before creating anything, and leave a broker that failed every restart with EMFILE. Each request
here goes through a real socket exactly as a client sends it; the answer must be Kafka's
POLICY_VIOLATION with a message naming the limit's key, the registry file must be byte for byte
what it was, and the broker must restart and serve. The raw client's socket timeout (15 s) bounds
every answer, so a broker that starts creating the partitions fails these tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.state.topic_registry import TopicRegistry
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient, make_batch
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

pytestmark = pytest.mark.timeout(120)

FLIPPED_BIT_COUNT = 3 | (1 << 23)  # 8,388,611


def new_topic(name: str, partitions: int) -> dict[str, Any]:
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": -1,
        "assignments": [],
        "configs": [],
    }


def create_topics(
    client: RawClient, topics: list[dict[str, Any]], validate_only: bool = False
) -> list[dict[str, Any]]:
    body = {"topics": topics, "timeout_ms": 30_000, "validate_only": validate_only}
    return client.request(ApiKey.CREATE_TOPICS, 7, body)["topics"]


def create_partitions(
    client: RawClient, topic: str, count: int, validate_only: bool = False
) -> dict[str, Any]:
    body = {
        "topics": [{"name": topic, "count": count, "assignments": None}],
        "timeout_ms": 30_000,
        "validate_only": validate_only,
    }
    (result,) = client.request(ApiKey.CREATE_PARTITIONS, 3, body)["results"]
    return result


def partition_count(client: RawClient, topic: str) -> int | None:
    (entry,) = client.metadata([topic])["topics"]
    return len(entry["partitions"]) if entry["error_code"] == ErrorCode.NONE else None


def registry_bytes(broker: OdradekProcess) -> bytes:
    return (broker.data_dir / TopicRegistry.FILE_NAME).read_bytes()


def partition_dirs(broker: OdradekProcess, topic: str) -> list[Path]:
    return sorted(broker.data_dir.glob(f"{topic}-*"))


def assert_serves(broker: OdradekProcess, topic: str, partition: int) -> None:
    """The broker answers and appends: a record produced to ``topic`` gets an offset."""
    with RawClient(broker.bootstrap) as client:
        response = client.produce(topic, partition, make_batch([b"still serving"]))
    assert response["error_code"] == ErrorCode.NONE, response


def assert_policy_violation(result: dict[str, Any], key: str) -> None:
    assert result["error_code"] == ErrorCode.POLICY_VIOLATION, result
    assert key in result["error_message"], result


@pytest.fixture
def small_broker(tmp_path: Path) -> Iterator[OdradekProcess]:
    """A broker whose limits are lowered so that tests reach them with a handful of partitions."""
    overrides = {
        "max.partitions.per.broker": "20",
        "max.partitions.per.request": "12",
        "num.partitions": "13",
    }
    with OdradekProcess(tmp_path / "small-broker", overrides) as process:
        yield process


def test_a_million_partitions_are_refused_before_anything_is_registered(
    odradek_broker: OdradekProcess,
) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("existing", 2)
        before = registry_bytes(odradek_broker)
        for validate_only in (True, False):
            (result,) = create_topics(client, [new_topic("huge", 1_000_000)], validate_only)
            assert_policy_violation(result, "max.partitions.per.request")
        # Kafka counts the whole request: two topics that each fit refuse together when their
        # sum does not, and neither is created.
        results = create_topics(client, [new_topic("half-a", 6_000), new_topic("half-b", 6_000)])
        for result in results:
            assert_policy_violation(result, "max.partitions.per.request")
        assert registry_bytes(odradek_broker) == before
        for name in ("huge", "half-a", "half-b"):
            assert partition_count(client, name) is None
            assert partition_dirs(odradek_broker, name) == []
    odradek_broker.restart()
    assert_serves(odradek_broker, "existing", 1)


def test_create_partitions_to_a_flipped_bit_count_changes_nothing(odradek_broker: OdradekProcess) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("grown", 3)
        before = registry_bytes(odradek_broker)
        for validate_only in (True, False):
            result = create_partitions(client, "grown", FLIPPED_BIT_COUNT, validate_only)
            assert_policy_violation(result, "max.partitions.per.request")
        assert registry_bytes(odradek_broker) == before
        assert partition_count(client, "grown") == 3
        assert len(partition_dirs(odradek_broker, "grown")) == 3
    odradek_broker.restart()
    with RawClient(odradek_broker.bootstrap) as client:
        assert partition_count(client, "grown") == 3
    assert_serves(odradek_broker, "grown", 2)


def test_the_broker_total_is_bounded(small_broker: OdradekProcess) -> None:
    with RawClient(small_broker.bootstrap) as client:
        client.create_topic("first", 12)
        (result,) = create_topics(client, [new_topic("too-many", 9)])
        assert_policy_violation(result, "max.partitions.per.broker")
        # Within one request the topics accepted earlier count: the second does not fit, also
        # when only validating (nothing is registered then).
        accepted, refused = create_topics(client, [new_topic("fits", 5), new_topic("overflows", 5)], True)
        assert accepted["error_code"] == ErrorCode.NONE, accepted
        assert_policy_violation(refused, "max.partitions.per.broker")
        fits, overflows = create_topics(client, [new_topic("fits", 5), new_topic("overflows", 5)])
        assert fits["error_code"] == ErrorCode.NONE, fits
        assert_policy_violation(overflows, "max.partitions.per.broker")
        assert_policy_violation(create_partitions(client, "first", 16), "max.partitions.per.broker")
        assert create_partitions(client, "first", 15)["error_code"] == ErrorCode.NONE
        assert [partition_count(client, t) for t in ("first", "fits", "too-many", "overflows")] == [
            15,
            5,
            None,
            None,
        ]
    small_broker.restart()
    assert_serves(small_broker, "first", 14)


def test_defaults_that_exceed_a_limit_refuse_creation(small_broker: OdradekProcess) -> None:
    """num.partitions (13) above max.partitions.per.request (12): neither CreateTopics with -1
    nor auto-creation may create the topic."""
    with RawClient(small_broker.bootstrap) as client:
        (result,) = create_topics(client, [new_topic("by-default", -1)])
        assert_policy_violation(result, "max.partitions.per.request")
        body = {"topics": [{"name": "auto-created"}], "allow_auto_topic_creation": True}
        for _ in range(2):  # the first Metadata would trigger the creation, the second see it
            (entry,) = client.request(ApiKey.METADATA, 12, body)["topics"]
            assert entry["error_code"] == ErrorCode.POLICY_VIOLATION, entry
        assert partition_count(client, "by-default") is None
        assert partition_count(client, "auto-created") is None
