"""Client metrics subscriptions and telemetry (KIP-714) over raw requests to a real broker.

Stock clients retry, back off and hide error codes; these tests send exactly one request and
check exactly its answer. The expected codes and messages are Apache Kafka 4.3.1's, taken
from a real broker. Subscriptions apply to every client they match, so each test matches its
own client id only.
"""

from __future__ import annotations

import gzip
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.client.admin_client import KafkaConnection
from broker.services.telemetry.client_metrics_manager import (
    MAX_IDENTITY_BYTES,
    MAX_INSTANCES,
    instance_id_text,
)
from compat_tests.kit.broker_process import OdradekProcess
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

CLIENT_METRICS = 16
SET, DELETE, APPEND = 0, 1, 2
ZERO_ID = bytes(16)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def connect(broker: OdradekProcess, client_id: str, software: str = "odradek-tests") -> KafkaConnection:
    """A connection that announced itself as ``software`` 1.0 in ApiVersions v3, as clients do."""
    connection = KafkaConnection(broker.bootstrap, client_id=client_id)
    answer = connection.request(
        ApiKey.API_VERSIONS, 3, {"client_software_name": software, "client_software_version": "1.0"}
    )
    assert answer["error_code"] == ErrorCode.NONE
    return connection


def alter(
    connection: KafkaConnection,
    name: str,
    changes: list[tuple[str, int, str | None]],
    validate_only: bool = False,
) -> tuple[int, str | None]:
    """One IncrementalAlterConfigs of one subscription: its error code and message."""
    body = {
        "resources": [
            {
                "resource_type": CLIENT_METRICS,
                "resource_name": name,
                "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in changes],
            }
        ],
        "validate_only": validate_only,
    }
    (result,) = connection.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)["responses"]
    return result["error_code"], result["error_message"]


def subscribe(connection: KafkaConnection, name: str, client_id: str, metrics: str, interval_ms: int) -> None:
    code, message = alter(
        connection,
        name,
        [
            ("metrics", SET, metrics),
            ("interval.ms", SET, str(interval_ms)),
            ("match", SET, f"client_id={client_id}"),
        ],
    )
    assert code == ErrorCode.NONE, message


def describe(
    connection: KafkaConnection, name: str, keys: list[str] | None = None, documentation: bool = True
) -> dict[str, Any]:
    body = {
        "resources": [{"resource_type": CLIENT_METRICS, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": True,
        "include_documentation": documentation,
    }
    (result,) = connection.request(ApiKey.DESCRIBE_CONFIGS, 4, body)["results"]
    return result


def listed(connection: KafkaConnection, version: int, types: list[int] | None = None) -> dict[str, Any]:
    return connection.request(ApiKey.LIST_CONFIG_RESOURCES, version, {"resource_types": types or []})


def get_subscription(connection: KafkaConnection, instance_id: bytes = ZERO_ID) -> dict[str, Any]:
    return connection.request(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, {"client_instance_id": instance_id})


def push(connection: KafkaConnection, subscription: dict[str, Any], **fields: Any) -> int:
    """One PushTelemetry for ``subscription`` (a GetTelemetrySubscriptions answer); its error code."""
    body = {
        "client_instance_id": subscription["client_instance_id"],
        "subscription_id": subscription["subscription_id"],
        "terminating": False,
        "compression_type": 0,
        "metrics": b"opaque otlp bytes",
    } | fields
    return connection.request(ApiKey.PUSH_TELEMETRY, 0, body)["error_code"]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OdradekProcess]:
    """One broker for the module, logging each push (DEBUG), with a small telemetry.max.bytes."""
    process = OdradekProcess(
        tmp_path_factory.mktemp("telemetry-broker"), {"telemetry.max.bytes": "4096"}, log_level="DEBUG"
    ).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def admin(broker: OdradekProcess) -> Iterator[KafkaConnection]:
    with connect(broker, "telemetry-admin") as connection:
        yield connection


INVALID_SUBSCRIPTIONS = [
    ([("interval.ms", SET, "50")], ErrorCode.INVALID_REQUEST, "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
    ([("interval.ms", SET, "3600001")], ErrorCode.INVALID_REQUEST, "Invalid value 3600001 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
    ([("interval.ms", SET, "abc")], ErrorCode.INVALID_CONFIG, "Invalid value abc for configuration interval.ms: Not a number of type INT"),
    ([("interval.ms", SET, "")], ErrorCode.INVALID_CONFIG, "Invalid value  for configuration interval.ms: Not a number of type INT"),
    ([("interval.ms", SET, None)], ErrorCode.INVALID_REQUEST, "Null value not supported for : interval.ms"),
    ([("match", SET, "foo=bar")], ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: foo=bar"),
    ([("match", SET, "client_id")], ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: client_id"),
    ([("match", SET, "client_id=a=b")], ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: client_id=a=b"),
    ([("match", SET, "client_id=[")], ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: client_id=["),
    ([("foo", SET, "1")], ErrorCode.INVALID_REQUEST, "Unknown client metrics configuration: foo"),
    ([("metrics", SET, "a,,b")], ErrorCode.INVALID_CONFIG, "Configuration 'metrics' values must not be empty."),
    ([("metrics", APPEND, "a")], ErrorCode.INVALID_CONFIG, "Can't APPEND to key metrics because its type is not LIST."),
    ([("metrics", SET, "a"), ("metrics", SET, "b")], ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "code", "message"), INVALID_SUBSCRIPTIONS)
def test_invalid_subscriptions_are_refused_as_kafka_refuses_them(
    admin: KafkaConnection, changes: list[tuple[str, int, str | None]], code: ErrorCode, message: str
) -> None:
    name = unique("invalid")
    assert alter(admin, name, changes) == (code, message)
    assert name not in [r["resource_name"] for r in listed(admin, 0)["config_resources"]]


def test_an_empty_subscription_name_is_refused(admin: KafkaConnection) -> None:
    assert alter(admin, "", [("metrics", SET, "a")]) == (
        ErrorCode.INVALID_REQUEST,
        "Subscription name can't be empty",
    )
    result = describe(admin, "")
    assert (result["error_code"], result["error_message"]) == (
        ErrorCode.INVALID_REQUEST,
        "Client metrics subscription name must not be empty",
    )


def test_describe_reports_set_keys_as_client_metrics_config_and_the_rest_as_defaults(
    admin: KafkaConnection,
) -> None:
    name = unique("described")
    assert alter(
        admin, name, [("metrics", SET, "org.apache.kafka.producer."), ("match", SET, " client_id = x ")]
    ) == (0, None)
    result = describe(admin, name)
    assert (result["error_code"], result["error_message"]) == (ErrorCode.NONE, "")
    entries = {
        e["name"]: (e["value"], e["config_source"], e["config_type"], e["synonyms"])
        for e in result["configs"]
    }
    assert entries == {
        "interval.ms": ("300000", 5, 3, []),
        "match": (" client_id = x ", 7, 7, [{"name": "match", "value": " client_id = x ", "source": 7}]),
        "metrics": ("org.apache.kafka.producer.", 7, 7, [{"name": "metrics", "value": "org.apache.kafka.producer.", "source": 7}]),
    }  # fmt: skip
    assert [e["name"] for e in describe(admin, name, ["metrics", "no.such.key"])["configs"]] == ["metrics"]
    assert [e["name"] for e in describe(admin, name, [])["configs"]] == ["interval.ms", "match", "metrics"]
    assert {e["documentation"] for e in describe(admin, name, documentation=False)["configs"]} == {None}
    assert describe(admin, name)["configs"][0]["documentation"] == "Metrics push interval in milliseconds"
    unknown = describe(admin, unique("never-set"))
    assert {e["name"]: e["value"] for e in unknown["configs"]} == {
        "interval.ms": "300000",
        "match": "",
        "metrics": "",
    }


def test_legacy_alter_configs_replaces_the_whole_subscription(admin: KafkaConnection) -> None:
    name = unique("legacy")

    def replace(configs: dict[str, str | None]) -> tuple[int, str | None]:
        resource = {
            "resource_type": CLIENT_METRICS,
            "resource_name": name,
            "configs": [{"name": k, "value": v} for k, v in configs.items()],
        }
        body = {"resources": [resource], "validate_only": False}
        (result,) = admin.request(ApiKey.ALTER_CONFIGS, 2, body)["responses"]
        return result["error_code"], result["error_message"]

    assert replace({"metrics": "a", "interval.ms": "2000", "match": "client_id=nobody"}) == (0, None)
    assert replace({"metrics": "b", "match": "client_id=nobody"}) == (0, None)
    assert {e["name"]: e["value"] for e in describe(admin, name)["configs"]}["interval.ms"] == "300000"
    assert replace({"metrics": None}) == (ErrorCode.INVALID_REQUEST, "Null value not supported for : metrics")
    assert replace({"interval.ms": "1"})[0] == ErrorCode.INVALID_REQUEST
    assert replace({}) == (0, None)
    assert name not in [r["resource_name"] for r in listed(admin, 0)["config_resources"]]


def test_validate_only_stores_nothing_and_deleting_every_key_removes_the_subscription(
    admin: KafkaConnection,
) -> None:
    name = unique("lifecycle")
    assert alter(admin, name, [("metrics", SET, "x")], validate_only=True) == (0, None)
    assert name not in [r["resource_name"] for r in listed(admin, 0)["config_resources"]]
    only_nobody = ("match", SET, "client_id=nobody")
    assert alter(admin, name, [("metrics", SET, "x"), ("interval.ms", SET, "1000"), only_nobody]) == (0, None)
    assert {"resource_name": name, "resource_type": CLIENT_METRICS} in listed(admin, 0)["config_resources"]
    assert alter(admin, name, [("interval.ms", DELETE, None), ("no.such.key", DELETE, None)]) == (0, None)
    assert {e["name"]: e["config_source"] for e in describe(admin, name)["configs"]}["interval.ms"] == 5
    assert alter(admin, name, [("metrics", DELETE, None), ("match", DELETE, None)]) == (0, None)
    assert name not in [r["resource_name"] for r in listed(admin, 0)["config_resources"]]


def test_list_config_resources_lists_what_each_version_covers(admin: KafkaConnection) -> None:
    name = unique("listed")
    topic = unique("listed-topic")
    assert alter(admin, name, [("metrics", SET, "x"), ("match", SET, "client_id=nobody")]) == (0, None)
    assert admin.create_topic(topic)["error_code"] == 0
    v0 = listed(admin, 0)["config_resources"]
    assert {r["resource_type"] for r in v0} == {CLIENT_METRICS}
    every = listed(admin, 1)["config_resources"]
    assert {"resource_name": name, "resource_type": CLIENT_METRICS} in every
    assert {"resource_name": "1", "resource_type": 4} in every
    assert {"resource_name": topic, "resource_type": 2} in every
    assert [r["resource_type"] for r in every] == sorted((r["resource_type"] for r in every), reverse=True)
    assert listed(admin, 1, [2]) == {
        "throttle_time_ms": 0,
        "error_code": 0,
        "config_resources": [r for r in every if r["resource_type"] == 2],
    }
    assert listed(admin, 1, [2, 99]) == {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.UNSUPPORTED_VERSION,
        "config_resources": [],
    }


def test_subscriptions_survive_a_restart(tmp_path: Path) -> None:
    broker = OdradekProcess(tmp_path / "broker").start()
    try:
        with connect(broker, "admin") as admin:
            assert alter(admin, "kept", [("metrics", SET, "a,b"), ("interval.ms", SET, "2000")]) == (0, None)
            assert alter(admin, "dropped", [("metrics", SET, "c")]) == (0, None)
            assert alter(admin, "dropped", [("metrics", DELETE, None)]) == (0, None)
        broker.kill()
        broker.start()
        with connect(broker, "admin") as admin:
            assert [r["resource_name"] for r in listed(admin, 0)["config_resources"]] == ["kept"]
            values = {e["name"]: e["value"] for e in describe(admin, "kept")["configs"]}
            assert values == {"interval.ms": "2000", "match": "", "metrics": "a,b"}
    finally:
        broker.stop()


def test_a_matching_client_gets_the_union_of_its_subscriptions_and_the_shortest_interval(
    broker: OdradekProcess, admin: KafkaConnection
) -> None:
    client_id = unique("matched")
    subscribe(admin, unique("producer"), client_id, "org.apache.kafka.producer.", 2000)
    subscribe(
        admin, unique("consumer"), client_id, "org.apache.kafka.consumer.,org.apache.kafka.producer.", 1000
    )
    with connect(broker, client_id) as client, connect(broker, unique("unmatched")) as other:
        answer = get_subscription(client)
        assert answer["error_code"] == ErrorCode.NONE and answer["client_instance_id"] != ZERO_ID
        assert sorted(answer["requested_metrics"]) == [
            "org.apache.kafka.consumer.",
            "org.apache.kafka.producer.",
        ]
        assert answer["push_interval_ms"] == 1000
        assert answer["accepted_compression_types"] == [4, 3, 1, 2]
        assert (answer["telemetry_max_bytes"], answer["delta_temporality"]) == (4096, True)
        nothing = get_subscription(other)
        assert (nothing["requested_metrics"], nothing["push_interval_ms"]) == ([], 300000)


def test_match_patterns_cover_software_and_address_and_all_metrics_wins(
    broker: OdradekProcess, admin: KafkaConnection
) -> None:
    software = unique("special-client")
    name = unique("by-software")
    assert alter(
        admin,
        name,
        [
            ("metrics", SET, "*"),
            ("match", SET, f"client_software_name={software},client_source_address=127\\.0\\..*"),
        ],
    ) == (0, None)
    narrow = unique("narrow")
    assert alter(
        admin, narrow, [("metrics", SET, "a."), ("match", SET, f"client_software_name={software}")]
    ) == (0, None)
    with (
        connect(broker, unique("any"), software=software) as client,
        connect(broker, unique("plain")) as plain,
    ):
        assert get_subscription(client)["requested_metrics"] == ["*"]
        assert get_subscription(plain)["requested_metrics"] == []
    for subscription in (name, narrow):
        assert alter(admin, subscription, [("metrics", DELETE, None), ("match", DELETE, None)]) == (0, None)


def test_pushes_are_throttled_to_the_interval_and_counted(
    broker: OdradekProcess, admin: KafkaConnection
) -> None:
    client_id = unique("pusher")
    subscribe(admin, unique("fast"), client_id, "*", 100)
    with connect(broker, client_id) as client:
        subscription = get_subscription(client)
        assert (
            get_subscription(client, subscription["client_instance_id"])["error_code"]
            == ErrorCode.THROTTLING_QUOTA_EXCEEDED
        )
        assert push(client, subscription) == ErrorCode.NONE  # right after GetTelemetrySubscriptions
        assert push(client, subscription) == ErrorCode.THROTTLING_QUOTA_EXCEEDED
        time.sleep(0.15)
        compressed = gzip.compress(b"m" * 3000)
        assert push(client, subscription, compression_type=1, metrics=compressed) == ErrorCode.NONE
    pushed = (
        f"client telemetry pushed by client instance {instance_id_text(subscription['client_instance_id'])}: "
    )
    lines = [line.split(pushed, 1)[1] for line in broker.log_text().splitlines() if pushed in line]
    assert len(lines) == 2, lines
    first_size = len(b"opaque otlp bytes")
    assert lines[0].startswith(
        f"{first_size} bytes ({first_size} as sent; client id '{client_id}', odradek-tests 1.0 from 127.0.0.1; 1 pushes, {first_size} bytes as sent so far)"
    )
    assert lines[1].startswith(f"3000 bytes ({len(compressed)} as sent; ")
    assert lines[1].endswith(f"2 pushes, {first_size + len(compressed)} bytes as sent so far)")


def test_push_errors_follow_kafkas_order(broker: OdradekProcess, admin: KafkaConnection) -> None:
    client_id = unique("erring")
    subscribe(admin, unique("errors"), client_id, "*", 100)
    with connect(broker, client_id) as client:
        assert (
            push(client, {"client_instance_id": ZERO_ID, "subscription_id": 0}) == ErrorCode.INVALID_REQUEST
        )
        assert (
            push(client, {"client_instance_id": uuid.uuid4().bytes, "subscription_id": 0})
            == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        )
        # UNKNOWN_SUBSCRIPTION_ID lets the client ask again at once, without throttling.
        stale = get_subscription(client)
        assert (
            push(client, stale, subscription_id=stale["subscription_id"] ^ 1)
            == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        )
        assert get_subscription(client, stale["client_instance_id"])["error_code"] == ErrorCode.NONE

        def fresh_instance() -> dict[str, Any]:
            """A new instance's subscription: its first push is never throttled."""
            return get_subscription(client)

        assert push(client, fresh_instance(), compression_type=9) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        assert push(client, fresh_instance(), metrics=b"x" * 4097) == ErrorCode.TELEMETRY_TOO_LARGE
        bomb = gzip.compress(bytes(1 << 20))
        assert len(bomb) < 4096
        assert (
            push(client, fresh_instance(), compression_type=1, metrics=bomb) == ErrorCode.TELEMETRY_TOO_LARGE
        )
        assert (
            push(client, fresh_instance(), compression_type=1, metrics=b"not gzip")
            == ErrorCode.INVALID_RECORD
        )
        assert push(client, fresh_instance(), metrics=b"") == ErrorCode.NONE
        last = fresh_instance()
        assert push(client, last, terminating=True) == ErrorCode.NONE
        assert push(client, last, terminating=True) == ErrorCode.INVALID_REQUEST


def test_a_changed_subscription_reaches_a_client_at_once(
    broker: OdradekProcess, admin: KafkaConnection
) -> None:
    client_id = unique("changing")
    with connect(broker, client_id) as client:
        before = get_subscription(client)
        assert before["requested_metrics"] == []
        subscribe(admin, unique("late"), client_id, "org.apache.kafka.", 500)
        after = get_subscription(client, before["client_instance_id"])
        assert after["error_code"] == ErrorCode.NONE, "not throttled: the subscription changed"
        assert (after["requested_metrics"], after["push_interval_ms"]) == (["org.apache.kafka."], 500)
        assert after["subscription_id"] != before["subscription_id"]
        assert push(client, before) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID


def fill_with_instances(client: KafkaConnection, count: int) -> None:
    """``count`` GetTelemetrySubscriptions, pipelined, each for an instance id of its own."""
    pending = [
        client.send_request(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, {"client_instance_id": uuid.uuid4().bytes})
        for _ in range(count)
    ]
    for correlation_id in pending:
        answer = client.receive_response(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, correlation_id)
        assert answer["error_code"] == ErrorCode.NONE


@pytest.mark.parametrize(
    ("client_id", "instances"),
    [
        pytest.param("many-small", MAX_INSTANCES, id="by count"),
        pytest.param("x" * 30_000, MAX_IDENTITY_BYTES // 30_000, id="by what clients said"),
    ],
)
def test_client_instances_are_bounded(broker: OdradekProcess, client_id: str, instances: int) -> None:
    """Clients choose their own instance ids: the broker remembers the most recent 16,384, and
    fewer when their client ids are long (a client id may take 32 KiB)."""
    with connect(broker, client_id) as client:
        first = get_subscription(client)
        assert push(client, first) == ErrorCode.NONE
        assert push(client, first) == ErrorCode.THROTTLING_QUOTA_EXCEEDED, "remembered: within its interval"
        fill_with_instances(client, instances)
        assert push(client, first) == ErrorCode.NONE, "forgotten, so met as a new instance"
