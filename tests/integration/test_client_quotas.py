"""Client quotas over raw requests to a real broker: DescribeClientQuotas, AlterClientQuotas,
and the throttle time a Produce or Fetch over its quota is answered with.

The validation codes and messages are Kafka's controller's (``ClientQuotaControlManager``,
``ClientQuotasImage.describe``); every expected value here, throttle times included, was
checked by sending the same requests to a real Apache Kafka 4.3.1 broker. The throttle times follow Kafka's formula over its windows
(11 samples of 1 s): a client's first request is measured over the 10 whole windows, so a
first request of ``n`` bytes against a quota of ``q`` bytes/s is throttled
``round((n / 10 - q) / q * 10000)`` ms. Each throttled request gets its own connection, since
the broker mutes that connection for the throttle time.
"""

from __future__ import annotations

import socket
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.client.admin_client import PRODUCE_VERSION, KafkaConnection, produce_body
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient, fetch_body, make_batch, request_frame
from wire.api_keys import ApiKey
from wire.codec import encode_request
from wire.error_codes import ErrorCode
from wire.header import encode_request_header

EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def alter(
    connection: KafkaConnection,
    entries: list[tuple[dict[str, str | None], dict[str, float | None]]],
    **extra: Any,
) -> list[tuple[int, str | None]]:
    """One AlterClientQuotas: per entry the entity and its changes (None removes a key)."""
    body = {
        "entries": [
            {
                "entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
                "ops": [
                    {"key": k, "value": 0.0 if v is None else v, "remove": v is None}
                    for k, v in changes.items()
                ],
            }
            for entity, changes in entries
        ],
        "validate_only": extra.get("validate_only", False),
    }
    answer = connection.request(ApiKey.ALTER_CLIENT_QUOTAS, extra.get("version", 1), body)
    return [(entry["error_code"], entry["error_message"]) for entry in answer["entries"]]


def describe(
    connection: KafkaConnection,
    components: list[tuple[str, int, str | None]],
    strict: bool = False,
    version: int = 1,
) -> dict[str, Any]:
    body = {
        "components": [{"entity_type": t, "match_type": m, "match": n} for t, m, n in components],
        "strict": strict,
    }
    return connection.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, version, body)


def described(answer: dict[str, Any]) -> dict[frozenset[tuple[str, str | None]], dict[str, float]]:
    assert answer["error_code"] == ErrorCode.NONE, answer
    return {
        frozenset((e["entity_type"], e["entity_name"]) for e in entry["entity"]): {
            v["key"]: v["value"] for v in entry["values"]
        }
        for entry in answer["entries"]
    }


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OdradekProcess]:
    process = OdradekProcess(tmp_path_factory.mktemp("quota-broker")).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.mark.parametrize("version", [0, 1])
def test_alter_then_describe_by_filters(broker: OdradekProcess, version: int) -> None:
    user, client = unique("user"), unique("client")
    with KafkaConnection(broker.bootstrap) as connection:
        results = alter(
            connection,
            [
                ({"user": user}, {"producer_byte_rate": 1024.0}),
                (
                    {"user": user, "client-id": client},
                    {"consumer_byte_rate": 2048.0, "request_percentage": 12.5},
                ),
                ({"client-id": client}, {"controller_mutation_rate": 3.0}),
            ],
            version=version,
        )
        assert results == [(ErrorCode.NONE, None)] * 3
        by_user = described(describe(connection, [("user", EXACT, user)], version=version))
        assert by_user == {
            frozenset({("user", user)}): {"producer_byte_rate": 1024.0},
            frozenset({("user", user), ("client-id", client)}): {
                "consumer_byte_rate": 2048.0,
                "request_percentage": 12.5,
            },
        }
        strict = described(describe(connection, [("user", EXACT, user)], strict=True, version=version))
        assert list(strict) == [frozenset({("user", user)})]
        both = described(describe(connection, [("user", EXACT, user), ("client-id", SPECIFIED, None)]))
        assert list(both) == [frozenset({("user", user), ("client-id", client)})]
        # Removing the last key forgets the entity.
        assert alter(connection, [({"client-id": client}, {"controller_mutation_rate": None})]) == [
            (ErrorCode.NONE, None)
        ]
        assert described(describe(connection, [("client-id", EXACT, client)], strict=True)) == {}


def test_default_entities_and_validate_only(broker: OdradekProcess) -> None:
    with KafkaConnection(broker.bootstrap) as connection:
        assert alter(connection, [({"user": None}, {"request_percentage": 200.0})], validate_only=True) == [
            (ErrorCode.NONE, None)
        ]
        assert described(describe(connection, [("user", DEFAULT, None)], strict=True)) == {}
        assert alter(connection, [({"user": None, "client-id": None}, {"producer_byte_rate": 5e6})]) == [
            (ErrorCode.NONE, None)
        ]
        defaults = described(describe(connection, [("user", DEFAULT, None), ("client-id", DEFAULT, None)]))
        assert defaults == {frozenset({("user", None), ("client-id", None)}): {"producer_byte_rate": 5e6}}
        assert alter(connection, [({"user": None, "client-id": None}, {"producer_byte_rate": None})]) == [
            (ErrorCode.NONE, None)
        ]


@pytest.mark.parametrize(
    ("entity", "changes", "message"),
    [
        ({"group": "g"}, {"producer_byte_rate": 1.0}, "Unhandled client quota entity type: group"),
        ({"user": ""}, {"producer_byte_rate": 1.0}, "Empty user not supported"),
        ({}, {"producer_byte_rate": 1.0}, "Invalid empty client quota entity"),
        ({"user": "u"}, {"no_such_key": 1.0}, "Invalid configuration key no_such_key"),
        ({"user": "u"}, {"producer_byte_rate": 1.5}, "producer_byte_rate cannot be a fractional value."),
        ({"ip": "1.2.3.4"}, {"producer_byte_rate": 1.0}, "Invalid configuration key producer_byte_rate"),
        (
            {"user": "u"},
            {"connection_creation_rate": 1.0},
            "Invalid configuration key connection_creation_rate",
        ),
        (
            {"ip": "1.2.3.4", "user": "u"},
            {"connection_creation_rate": 1.0},
            "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
        ),
        (
            {"ip": "no such host"},
            {"connection_creation_rate": 1.0},
            "no such host is not a valid IP or resolvable host.",
        ),
        (
            {"ip": None},
            {"connection_creation_rate": 2.0**31},
            "Proposed value for connection_creation_rate is too large for an INT.",
        ),
        ({"client-id": "c"}, {"request_percentage": 0.0}, "Quota request_percentage must be greater than 0"),
    ],
)
def test_alter_validation(
    broker: OdradekProcess, entity: dict[str, str | None], changes: dict[str, float | None], message: str
) -> None:
    with KafkaConnection(broker.bootstrap) as connection:
        assert alter(connection, [(entity, changes)]) == [(ErrorCode.INVALID_REQUEST, message)]


def test_ip_quota_is_stored(broker: OdradekProcess) -> None:
    with KafkaConnection(broker.bootstrap) as connection:
        assert alter(connection, [({"ip": "10.1.2.3"}, {"connection_creation_rate": 7.0})]) == [
            (ErrorCode.NONE, None)
        ]
        assert described(describe(connection, [("ip", EXACT, "10.1.2.3")])) == {
            frozenset({("ip", "10.1.2.3")}): {"connection_creation_rate": 7.0}
        }


@pytest.mark.parametrize(
    ("components", "code", "message"),
    [
        (
            [("user", EXACT, None)],
            ErrorCode.INVALID_REQUEST,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
        ),
        (
            [("user", DEFAULT, "x")],
            ErrorCode.INVALID_REQUEST,
            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
        ),
        (
            [("user", SPECIFIED, None), ("user", DEFAULT, None)],
            ErrorCode.INVALID_REQUEST,
            "Entity type user cannot appear more than once in the filter.",
        ),
        ([("group", SPECIFIED, None)], ErrorCode.UNSUPPORTED_VERSION, "Unsupported entity type group"),
        (
            [("ip", SPECIFIED, None), ("user", SPECIFIED, None)],
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.",
        ),
        ([("user", 7, None)], ErrorCode.INVALID_REQUEST, "Unknown match type 7"),
    ],
)
def test_describe_validation(
    broker: OdradekProcess, components: list[tuple[str, int, str | None]], code: ErrorCode, message: str
) -> None:
    with KafkaConnection(broker.bootstrap) as connection:
        answer = describe(connection, components)
    assert (answer["error_code"], answer["error_message"]) == (code, message)


def first_request_throttle(size: int, quota: int) -> int:
    """Kafka's throttle time for a client's first request of ``size`` against ``quota``/s."""
    return max(0, round((size / 10 - quota) / quota * 10_000))


def test_produce_over_its_byte_rate_is_throttled(broker: OdradekProcess) -> None:
    client, topic = unique("slow-producer"), unique("quota-topic")
    with RawClient(broker.bootstrap) as admin:
        admin.create_topic(topic)
        assert alter(admin, [({"client-id": client}, {"producer_byte_rate": 1024.0})]) == [
            (ErrorCode.NONE, None)
        ]
    body = produce_body(topic, {0: make_batch([b"x" * 20_000])})
    with KafkaConnection(broker.bootstrap, client_id=client) as producer:
        size = len(encode_request_header(ApiKey.PRODUCE, PRODUCE_VERSION, 1, client)) + len(
            encode_request(ApiKey.PRODUCE, PRODUCE_VERSION, body)
        )
        answer = producer.request(ApiKey.PRODUCE, PRODUCE_VERSION, body)
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == ErrorCode.NONE
    assert answer["throttle_time_ms"] == first_request_throttle(size, 1024) > 0
    with KafkaConnection(broker.bootstrap, client_id=unique("other")) as other:
        unthrottled = other.request(ApiKey.PRODUCE, PRODUCE_VERSION, body)
    assert unthrottled["throttle_time_ms"] == 0


def test_fetch_over_its_byte_rate_is_answered_empty_and_throttled(broker: OdradekProcess) -> None:
    client, topic = unique("slow-consumer"), unique("quota-topic")
    batch = make_batch([b"y" * 20_000])
    with RawClient(broker.bootstrap) as admin:
        admin.create_topic(topic)
        assert admin.produce(topic, 0, batch)["error_code"] == ErrorCode.NONE
        assert alter(
            admin, [({"user": "ANONYMOUS", "client-id": client}, {"consumer_byte_rate": 1000.0})]
        ) == [(ErrorCode.NONE, None)]
    with KafkaConnection(broker.bootstrap, client_id=client) as consumer:
        answer = consumer.request(ApiKey.FETCH, 12, fetch_body(topic, 0, 0))
    assert answer["error_code"] == ErrorCode.NONE
    assert answer["responses"] == []
    # Counted is the response as Kafka's FetchResponse.sizeOf: 4 + the v12 body, which is the
    # records and 58 bytes around them for one partition, plus the topic name.
    assert answer["throttle_time_ms"] == first_request_throttle(len(batch) + 58 + len(topic), 1000)


def test_quotas_survive_a_restart(tmp_path: Path) -> None:
    process = OdradekProcess(tmp_path).start()
    try:
        with KafkaConnection(process.bootstrap) as connection:
            assert alter(connection, [({"user": "alice"}, {"producer_byte_rate": 4096.0})]) == [
                (ErrorCode.NONE, None)
            ]
        process.stop()
        process.start()
        with KafkaConnection(process.bootstrap) as connection:
            assert described(describe(connection, [("user", EXACT, "alice")])) == {
                frozenset({("user", "alice")}): {"producer_byte_rate": 4096.0}
            }
    finally:
        process.stop()


def test_request_percentage_throttles_at_most_one_window(broker: OdradekProcess) -> None:
    """Kafka bounds a request-quota throttle by one quota window (1 s); a Fetch throttled by it
    answers without its data, and ApiVersions is counted too (on a PLAINTEXT listener)."""
    client, topic = unique("busy"), unique("quota-topic")
    with RawClient(broker.bootstrap) as admin:
        admin.create_topic(topic)
        assert admin.produce(topic, 0, make_batch([b"z"]))["error_code"] == ErrorCode.NONE
        assert alter(admin, [({"client-id": client}, {"request_percentage": 1e-9})]) == [
            (ErrorCode.NONE, None)
        ]
    with KafkaConnection(broker.bootstrap, client_id=client) as busy:
        fetched = busy.request(ApiKey.FETCH, 12, fetch_body(topic, 0, 0))
    assert (fetched["throttle_time_ms"], fetched["responses"]) == (1000, [])
    with KafkaConnection(broker.bootstrap, client_id=client) as busy:
        answer = busy.request(ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
    assert answer["throttle_time_ms"] == 1000
    with KafkaConnection(broker.bootstrap, client_id=client) as busy:
        assert busy.request(ApiKey.API_VERSIONS, 3, {})["throttle_time_ms"] == 1000  # not exempt


def test_topic_mutations_over_the_controller_mutation_rate_are_refused(broker: OdradekProcess) -> None:
    """CreateTopics v6+ is strict (KIP-599): a request may take the quota past its bound (an 11
    credit burst at 1/s here), the next topics are refused while it is exceeded."""
    client = unique("mutator")
    with KafkaConnection(broker.bootstrap) as admin:
        assert alter(admin, [({"client-id": client}, {"controller_mutation_rate": 1.0})]) == [
            (ErrorCode.NONE, None)
        ]

    def create(connection: KafkaConnection, name: str, partitions: int) -> dict[str, Any]:
        topic = {
            "name": name,
            "num_partitions": partitions,
            "replication_factor": 1,
            "assignments": [],
            "configs": [],
        }
        body = {"topics": [topic], "timeout_ms": 30_000, "validate_only": False}
        return connection.request(ApiKey.CREATE_TOPICS, 7, body)

    with KafkaConnection(broker.bootstrap, client_id=client) as mutator:
        first = create(mutator, unique("mutated"), 20)
        assert (first["throttle_time_ms"], first["topics"][0]["error_code"]) == (0, ErrorCode.NONE)
        second = create(mutator, unique("refused"), 1)
    (refused,) = second["topics"]
    assert (refused["error_code"], refused["error_message"]) == (ErrorCode.THROTTLING_QUOTA_EXCEEDED, None)
    assert 0 < second["throttle_time_ms"] <= 9000  # 9 credits short, less what refilled meanwhile


def api_versions_from(broker: OdradekProcess, source_ip: str) -> socket.socket:
    """A connection from ``source_ip`` (any 127.x address reaches the loopback listener) that
    has sent an ApiVersions v0 request."""
    host, _, port = broker.bootstrap.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=15, source_address=(source_ip, 0))
    sock.sendall(request_frame(ApiKey.API_VERSIONS, 0, {}))
    return sock


def closed_unanswered(sock: socket.socket) -> bool:
    """The broker closed the connection without a byte (a reset: it had our request unread)."""
    try:
        return sock.recv(4) == b""
    except ConnectionResetError:
        return True


def test_connections_over_the_ip_creation_rate_are_closed_unanswered(broker: OdradekProcess) -> None:
    """11 connections at once from an address allowed 1/s: the first 10 make 1/s over Kafka's
    10 whole windows, the 11th is over it and closed after its throttle time, never answered."""
    source = "127.0.0.2"
    with KafkaConnection(broker.bootstrap) as admin:
        assert alter(admin, [({"ip": source}, {"connection_creation_rate": 1.0})]) == [(ErrorCode.NONE, None)]
    admitted = [api_versions_from(broker, source) for _ in range(10)]
    refused = api_versions_from(broker, source)
    try:
        for sock in admitted:
            (size,) = struct.unpack(">i", sock.recv(4))
            assert size > 0
        assert closed_unanswered(refused)
        other = api_versions_from(broker, "127.0.0.3")
        assert other.recv(4) != b""
        other.close()
    finally:
        for sock in [*admitted, refused]:
            sock.close()
