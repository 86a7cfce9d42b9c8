"""What Kafka keeps in its metadata log holds on every broker of a cluster: a change made through
one broker takes effect through another (run with ``--nodes 3``; skipped otherwise).

ACLs, SCRAM credentials, client quotas, dynamic broker and group configs and client-metrics
subscriptions are each changed with a request sent to one chosen broker (a raw request, so that
no client routes it elsewhere) and observed through another: a produce refused, a login
accepted, a produce throttled, a config described. Each observation is first made before the
change, so a scenario fails if the broker it observes through already behaved that way.

The session cluster runs the StandardAuthorizer allowing what no ACL names, and a SCRAM-SHA-256
listener beside PLAINTEXT (:data:`compat_tests.kit.clusters.SHARED_SECURITY`). Each scenario
prints how long the change took to show through the other broker; ``docs/CLUSTER.md`` gives
the bound, :data:`PROPAGATION_BOUND_S` is what a loaded CI machine is allowed.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from broker.client.admin_client import KafkaConnection
from compat_tests.helpers import eventually
from compat_tests.kit.clusters import Cluster
from compat_tests.kit.drivers.confluent import ConfluentAdmin
from compat_tests.kit.raw_protocol import ask, make_batch
from compat_tests.topic_metadata import wait_until_every_broker_lists
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

pytestmark = pytest.mark.cluster

PROPAGATION_BOUND_S = 10.0
"""How long a change may take to show through another broker here (docs/CLUSTER.md: measured)."""
TIMEOUT_S = 10.0

# Kafka's codes: resource types, pattern types, operations, permissions, config operations.
TOPIC, BROKER, CLIENT_METRICS, GROUP = 2, 4, 16, 32
LITERAL, WRITE, ALLOW = 3, 4, 3
SET, DELETE = 0, 1
SCRAM_SHA_256 = 1
DYNAMIC_DEFAULT_BROKER_CONFIG = 3


def _until(what: str, check: Callable[[], bool]) -> float:
    """Seconds until ``check`` holds (at most :data:`PROPAGATION_BOUND_S`), printed."""
    started = time.monotonic()

    def holds() -> None:
        assert check(), f"{what}: not yet"

    eventually(holds, timeout_s=PROPAGATION_BOUND_S, interval_s=0.05)
    took = time.monotonic() - started
    print(f"{what}: {took * 1000:.0f} ms")
    return took


def _answer(address: str, api_key: ApiKey, version: int, body: dict[str, Any]) -> dict[str, Any]:
    return ask(address, api_key, version, body, TIMEOUT_S)


def _produce(address: str, topic: str, value: bytes, client_id: str = "shared-state") -> dict[str, Any]:
    """One Produce (acks=1) of ``value`` to partition 0 of ``topic`` at ``address``: the
    partition's answer plus the response's throttle time."""
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": int(TIMEOUT_S * 1000),
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": make_batch([value])}]}],
    }
    with KafkaConnection(address, TIMEOUT_S, client_id=client_id) as connection:
        response = connection.request(ApiKey.PRODUCE, 9, body)
    (partition,) = response["responses"][0]["partition_responses"]
    return {"error_code": partition["error_code"], "throttle_time_ms": response["throttle_time_ms"]}


def _led_by(cluster: Cluster, leader: int) -> str:
    """A new topic of one partition whose replicas are all three brokers, led by ``leader``."""
    topic = f"shared-{uuid.uuid4().hex[:10]}"
    others = [n for n in cluster.nodes if n != leader]
    ConfluentAdmin(cluster.bootstrap).create_topic(topic, 1, assignments=[[leader, *others]])
    return topic


def _broker_configs(address: str, node_id: int) -> dict[str, tuple[str | None, int]]:
    answer = _answer(
        address,
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": BROKER, "resource_name": str(node_id), "configuration_keys": None}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    (result,) = answer["results"]
    assert result["error_code"] == ErrorCode.NONE, result
    return {c["name"]: (c["value"], c["config_source"]) for c in result["configs"]}


def _configs_of(address: str, resource_type: int, name: str) -> dict[str, str | None]:
    """A resource's configs as the broker at ``address`` describes them (none: an error, as
    Kafka may answer for a subscription that does not exist)."""
    answer = _answer(
        address,
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": resource_type, "resource_name": name, "configuration_keys": None}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    (result,) = answer["results"]
    return (
        {c["name"]: c["value"] for c in result["configs"]} if result["error_code"] == ErrorCode.NONE else {}
    )


def _alter(address: str, resource_type: int, name: str, changes: dict[str, str | None]) -> None:
    """IncrementalAlterConfigs at ``address``: SET each key to its value, DELETE where None."""
    configs = [
        {"name": key, "config_operation": DELETE if value is None else SET, "value": value}
        for key, value in changes.items()
    ]
    answer = _answer(
        address,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [{"resource_type": resource_type, "resource_name": name, "configs": configs}],
            "validate_only": False,
        },
    )
    (result,) = answer["responses"]
    assert result["error_code"] == ErrorCode.NONE, result


@pytest.fixture
def cluster_up(cluster: Cluster) -> Cluster:
    """The session cluster with all three brokers registered (a failover scenario may have
    restarted one just before)."""
    wait_until_every_broker_lists(list(cluster.nodes.values()), len(cluster.nodes))
    return cluster


def test_acl_created_through_one_broker_refuses_a_produce_through_another(cluster_up: Cluster) -> None:
    topic = _led_by(cluster_up, 3)
    first, third = cluster_up.nodes[1], cluster_up.nodes[3]
    assert _produce(third, topic, b"before")["error_code"] == ErrorCode.NONE

    # Allowing someone else to write closes the topic to everyone else (allow.everyone applies
    # only where no ACL names the resource).
    acl = {
        "resource_type": TOPIC,
        "resource_name": topic,
        "resource_pattern_type": LITERAL,
        "principal": "User:someone-else",
        "host": "*",
        "operation": WRITE,
        "permission_type": ALLOW,
    }
    created = _answer(first, ApiKey.CREATE_ACLS, 3, {"creations": [acl]})
    assert [r["error_code"] for r in created["results"]] == [ErrorCode.NONE]
    try:
        _until(
            "ACL from broker 1 enforced by broker 3",
            lambda: _produce(third, topic, b"after")["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        )
    finally:
        acl_filter = {
            "resource_type_filter": TOPIC,
            "resource_name_filter": topic,
            "pattern_type_filter": LITERAL,
            "principal_filter": None,
            "host_filter": None,
            "operation": WRITE,
            "permission_type": ALLOW,
        }
        _answer(first, ApiKey.DELETE_ACLS, 3, {"filters": [acl_filter]})


def _logs_in(address: str, user: str, password: str) -> bool:
    """Whether librdkafka logs in with SCRAM-SHA-256 at ``address`` (and gets Metadata)."""
    admin = AdminClient(
        {
            "bootstrap.servers": address,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user,
            "sasl.password": password,
        }
    )
    try:
        admin.list_topics(timeout=3)
    except KafkaException:
        return False
    return True


def test_scram_user_created_through_one_broker_logs_in_through_another(cluster_up: Cluster) -> None:
    user, password = f"user-{uuid.uuid4().hex[:8]}", "shared-secret"
    login_at = cluster_up.members[1].scram_address
    assert not _logs_in(login_at, user, password)

    salt, iterations = os.urandom(16), 4096
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    upsertion = {
        "name": user,
        "mechanism": SCRAM_SHA_256,
        "iterations": iterations,
        "salt": salt,
        "salted_password": salted,
    }
    altered = _answer(
        cluster_up.nodes[2],
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        0,
        {"deletions": [], "upsertions": [upsertion]},
    )
    assert [r["error_code"] for r in altered["results"]] == [ErrorCode.NONE]
    _until("SCRAM user from broker 2 logs in at broker 1", lambda: _logs_in(login_at, user, password))


def test_quota_set_through_one_broker_throttles_through_another(cluster_up: Cluster) -> None:
    topic = _led_by(cluster_up, 3)
    client_id = f"quota-{uuid.uuid4().hex[:8]}"
    third = cluster_up.nodes[3]
    value = b"x" * 100_000
    assert _produce(third, topic, value, client_id)["throttle_time_ms"] == 0

    entity = [{"entity_type": "client-id", "entity_name": client_id}]
    quota = {"entity": entity, "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}
    altered = _answer(
        cluster_up.nodes[1], ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": [quota], "validate_only": False}
    )
    assert [e["error_code"] for e in altered["entries"]] == [ErrorCode.NONE]
    _until(
        "quota from broker 1 throttles at broker 3",
        lambda: _produce(third, topic, value, client_id)["throttle_time_ms"] > 0,
    )


def test_dynamic_default_broker_config_set_through_one_broker_is_in_effect_on_another(
    cluster_up: Cluster,
) -> None:
    key, value = "log.cleaner.backoff.ms", "16000"
    first, third = cluster_up.nodes[1], cluster_up.nodes[3]
    assert _broker_configs(third, 3)[key][0] != value
    _alter(first, BROKER, "", {key: value})
    try:
        _until(
            "default broker config from broker 1 in effect on broker 3",
            lambda: _broker_configs(third, 3)[key] == (value, DYNAMIC_DEFAULT_BROKER_CONFIG),
        )
    finally:
        _alter(first, BROKER, "", {key: None})


def test_group_config_set_through_one_broker_is_described_by_another(cluster_up: Cluster) -> None:
    group = f"group-{uuid.uuid4().hex[:8]}"
    key, value = "consumer.session.timeout.ms", "50000"
    assert _configs_of(cluster_up.nodes[3], GROUP, group).get(key) != value
    _alter(cluster_up.nodes[1], GROUP, group, {key: value})
    _until(
        "group config from broker 1 described by broker 3",
        lambda: _configs_of(cluster_up.nodes[3], GROUP, group).get(key) == value,
    )


def test_client_metrics_subscription_set_through_one_broker_is_described_by_another(
    cluster_up: Cluster,
) -> None:
    name = f"subscription-{uuid.uuid4().hex[:8]}"
    metrics = "org.apache.kafka.producer."
    assert _configs_of(cluster_up.nodes[3], CLIENT_METRICS, name).get("metrics") != metrics
    _alter(cluster_up.nodes[1], CLIENT_METRICS, name, {"metrics": metrics, "interval.ms": "60000"})
    try:
        _until(
            "client-metrics subscription from broker 1 described by broker 3",
            lambda: _configs_of(cluster_up.nodes[3], CLIENT_METRICS, name).get("metrics") == metrics,
        )
    finally:
        _alter(cluster_up.nodes[1], CLIENT_METRICS, name, {"metrics": None, "interval.ms": None})
