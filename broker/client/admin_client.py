"""A small blocking Kafka client on the project's own codecs, for the CLI and exact-byte tests.

The ``odradek topics``/``groups`` commands need a handful of admin requests and nothing of a
full client (no retries, no metadata cache, no batching), and tests of idempotence and error
codes need to send precisely one request and see precisely its answer.  Both speak to any
Kafka-compatible broker, since they use nothing but the protocol.
"""

from __future__ import annotations

import itertools
import socket
import ssl
import struct
from collections.abc import Callable, Mapping
from typing import Any

from broker.client.security import PLAINTEXT, AuthenticationFailed, ClientSecurity, authenticate
from wire.api_keys import ApiKey
from wire.codec import decode_response, encode_request
from wire.header import decode_response_header, encode_request_header, response_header_version

LATEST, EARLIEST = -1, -2
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
READ_UNCOMMITTED, READ_COMMITTED = 0, 1  # Kafka's isolation.level, as Fetch and ListOffsets carry it


class BrokerUnreachable(ConnectionError):
    """No broker answered at the given address; the message says what to check."""


PRODUCE_VERSION = 9
# What this client accepts in one response: Kafka's own request bound (socket.request.max.bytes),
# far above any answer to the bounded requests it sends (Fetch asks for at most 1 MiB).
MAX_RESPONSE_BYTES = 100 * 1024 * 1024
FETCH_PARTITION_BYTES = 1 << 20
REQUEST_TIMEOUT_MS = 30_000
"""The ``timeout_ms`` of the requests that carry one (Produce, CreateTopics, DeleteTopics): how
long the broker may wait for replicas before answering, the clients' default request.timeout.ms."""


def produce_body(topic: str, batches: dict[int, bytes], acks: int = -1) -> dict[str, Any]:
    """A Produce v9 request body: one record batch per partition of ``topic``."""
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": REQUEST_TIMEOUT_MS,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": p, "records": b} for p, b in batches.items()]}
        ],
    }


def fetch_body(
    topic: str,
    positions: dict[int, int],
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    isolation_level: int = READ_UNCOMMITTED,
) -> dict[str, Any]:
    """A sessionless Fetch v12 request body for one topic, up to 1 MiB per partition."""
    at = {(topic, partition): offset for partition, offset in positions.items()}
    return fetch_request_body(at, max_wait_ms, min_bytes, isolation_level)


def fetch_request_body(
    positions: Mapping[tuple[str, int], int],
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    isolation_level: int = READ_UNCOMMITTED,
    max_bytes: int = FETCH_PARTITION_BYTES,
    partition_max_bytes: int = FETCH_PARTITION_BYTES,
) -> dict[str, Any]:
    """A sessionless Fetch v12 request body for ``positions`` (topic, partition) -> offset,
    partitions grouped by topic in their order."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), offset in positions.items():
        entry = {"partition": partition, "fetch_offset": offset, "partition_max_bytes": partition_max_bytes}
        topics.setdefault(topic, []).append(entry)
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": isolation_level,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": name, "partitions": entries} for name, entries in topics.items()],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def topic_entries(
    values: dict[tuple[str, int], int], entry: Callable[[int, int], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Per-partition values as the ``topics: [{name, partitions: [...]}]`` of group requests."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), value in sorted(values.items()):
        topics.setdefault(topic, []).append(entry(partition, value))
    return [{"name": name, "partitions": partitions} for name, partitions in topics.items()]


def partition_errors(topics: list[dict[str, Any]]) -> dict[tuple[str, int], int]:
    """The error code per (topic, partition) of a group response's ``topics``."""
    return {(t["name"], p["partition_index"]): p["error_code"] for t in topics for p in t["partitions"]}


def request_frame(
    api_key: int, version: int, correlation_id: int, client_id: str, body: dict[str, Any]
) -> bytes:
    """A whole request as sent: size prefix, header, body."""
    payload = encode_request_header(api_key, version, correlation_id, client_id) + encode_request(
        api_key, version, body
    )
    return struct.pack(">i", len(payload)) + payload


def response_size(prefix: bytes | bytearray, limit: int) -> int:
    """The size a response's 4-byte prefix announces; a ``ConnectionError`` beyond ``limit``."""
    (size,) = struct.unpack(">i", prefix)
    if not 4 <= size <= limit:
        raise ConnectionError(f"the broker announced a {size}-byte response; refusing it")
    return size


def decode_answer(
    api_key: int, version: int, correlation_id: int, response: bytes | bytearray
) -> dict[str, Any]:
    """A response's body, which must answer ``correlation_id`` (Kafka answers in order)."""
    received_id, offset = decode_response_header(response, 0, response_header_version(api_key, version))
    if received_id != correlation_id:
        raise ConnectionError(f"response {received_id} does not answer request {correlation_id}")
    return decode_response(api_key, version, response, offset)


class KafkaConnection:
    """One connection to a broker; ``request`` sends a body and returns the decoded response."""

    def __init__(
        self,
        bootstrap: str,
        timeout: float = 15.0,
        client_id: str = "odradek-cli",
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        host, _, port = bootstrap.rpartition(":")
        try:
            self._sock = socket.create_connection((host or "localhost", int(port)), timeout=timeout)
        except (OSError, ValueError) as exc:
            raise BrokerUnreachable(
                f"cannot reach a broker at {bootstrap} ({exc}); is `odradek serve` running there? "
                "Pass --bootstrap HOST:PORT to use another address."
            ) from exc
        self._client_id = client_id
        self._correlation = itertools.count(1)
        try:
            if security.uses_tls:
                self._sock = security.tls_context().wrap_socket(
                    self._sock, server_hostname=host or "localhost"
                )
            if security.uses_sasl:
                self._sasl(security)
        except ssl.SSLError as exc:
            self._sock.close()
            raise BrokerUnreachable(
                f"TLS with the broker at {bootstrap} failed ({exc.reason or exc}); check its certificate "
                "against ssl.truststore.location (PEM) and that the listener speaks TLS"
            ) from exc
        except (OSError, AuthenticationFailed):
            self._sock.close()
            raise

    def _sasl(self, security: ClientSecurity) -> None:
        """SaslHandshake v1, then SaslAuthenticate v2 tokens for the mechanism's exchange."""
        handshake = self.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": security.mechanism})
        if handshake["error_code"]:
            raise AuthenticationFailed(
                f"the broker does not take SASL {security.mechanism} on this listener "
                f"(it takes {', '.join(handshake['mechanisms']) or 'none'}); set sasl.mechanism accordingly"
            )

        def exchange(token: bytes) -> bytes:
            answer = self.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
            if answer["error_code"]:
                raise AuthenticationFailed(
                    f"authentication as {security.username} failed: "
                    f"{answer['error_message'] or 'the broker refused the credentials'}"
                )
            return bytes(answer["auth_bytes"])

        authenticate(security, exchange)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> KafkaConnection:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _receive(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self._sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return bytes(data)

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        return self.receive_response(api_key, version, self.send_request(api_key, version, body))

    def send_request(self, api_key: int, version: int, body: dict[str, Any]) -> int:
        """Send a request without waiting for its answer (pipelining); returns its correlation id."""
        correlation_id = next(self._correlation)
        self._sock.sendall(request_frame(api_key, version, correlation_id, self._client_id, body))
        return correlation_id

    def receive_response(self, api_key: int, version: int, correlation_id: int) -> dict[str, Any]:
        """The next response, which must answer ``correlation_id`` (Kafka answers in order)."""
        size = response_size(self._receive(4), MAX_RESPONSE_BYTES)
        return decode_answer(api_key, version, correlation_id, self._receive(size))

    # --- the requests the CLI and tests use -------------------------------------------------

    def metadata(
        self, topics: list[str] | None = None, allow_auto_topic_creation: bool = False
    ) -> dict[str, Any]:
        """Metadata v12; a producer allows auto-creation (the broker may then create ``topics``)."""
        return self.request(
            ApiKey.METADATA,
            12,
            {
                "topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": allow_auto_topic_creation,
            },
        )

    def create_topic(
        self, name: str, partitions: int = -1, configs: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """CreateTopics for one topic; returns its result entry (error_code, error_message, ...)."""
        response = self.request(
            ApiKey.CREATE_TOPICS,
            7,
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": -1,
                        "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                    }
                ],
                "timeout_ms": REQUEST_TIMEOUT_MS,
            },
        )
        return response["topics"][0]

    def delete_topic(self, name: str) -> dict[str, Any]:
        response = self.request(
            ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": name}], "timeout_ms": REQUEST_TIMEOUT_MS}
        )
        return response["responses"][0]

    def list_offsets(
        self, topic: str, partitions: list[int], timestamp: int, isolation_level: int = READ_UNCOMMITTED
    ) -> dict[int, int]:
        """Offset per partition for a ListOffsets timestamp (LATEST, EARLIEST or a time); LATEST
        is the last stable offset under READ_COMMITTED."""
        response = self.request(
            ApiKey.LIST_OFFSETS,
            7,
            {
                "replica_id": -1,
                "isolation_level": isolation_level,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [{"partition_index": p, "timestamp": timestamp} for p in partitions],
                    }
                ],
            },
        )
        return {p["partition_index"]: p["offset"] for p in response["topics"][0]["partitions"]}

    def produce(self, topic: str, partition: int, batch: bytes, acks: int = -1) -> dict[str, Any]:
        """Produce one record batch (v9); returns the partition's response."""
        response = self.request(
            ApiKey.PRODUCE, PRODUCE_VERSION, produce_body(topic, {partition: batch}, acks)
        )
        return response["responses"][0]["partition_responses"][0]

    def describe_configs(self, name: str, resource_type: int = TOPIC_RESOURCE) -> dict[str, Any]:
        """DescribeConfigs v4 of one resource; returns its result (error_code, configs, ...)."""
        response = self.request(
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
        return response["results"][0]

    def alter_configs(
        self, name: str, changes: list[tuple[str, int, str | None]], resource_type: int = TOPIC_RESOURCE
    ) -> dict[str, Any]:
        """IncrementalAlterConfigs v1 of one resource: ``(key, operation, value)`` changes."""
        configs = [{"name": k, "config_operation": op, "value": v} for k, op, v in changes]
        response = self.request(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            {
                "resources": [{"resource_type": resource_type, "resource_name": name, "configs": configs}],
                "validate_only": False,
            },
        )
        return response["responses"][0]

    def fetch(
        self, topic: str, positions: dict[int, int], max_wait_ms: int, isolation_level: int = READ_UNCOMMITTED
    ) -> list[dict[str, Any]]:
        """One sessionless Fetch v12 from ``positions``; the partitions' answers."""
        body = fetch_body(topic, positions, max_wait_ms, min_bytes=1, isolation_level=isolation_level)
        response = self.request(ApiKey.FETCH, 12, body)
        if response["error_code"]:
            return [{"partition_index": p, "error_code": response["error_code"]} for p in positions]
        return [p for t in response["responses"] for p in t["partitions"]]

    def commit_offsets(self, group: str, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """OffsetCommit v8 as a standalone (generation -1) commit; the error code per partition.

        Kafka accepts this only while the group has no members, which is what offset resets
        and console consumers without a subscription need.
        """
        topics = topic_entries(
            offsets, lambda p, o: {"partition_index": p, "committed_offset": o, "committed_metadata": ""}
        )
        body = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "topics": topics}
        return partition_errors(self.request(ApiKey.OFFSET_COMMIT, 8, body)["topics"])

    def delete_offsets(
        self, group: str, partitions: list[tuple[str, int]]
    ) -> tuple[int, dict[tuple[str, int], int]]:
        """OffsetDelete v0: the group's error code and the error code per partition."""
        topics = topic_entries(dict.fromkeys(partitions, 0), lambda p, _: {"partition_index": p})
        response = self.request(ApiKey.OFFSET_DELETE, 0, {"group_id": group, "topics": topics})
        return response["error_code"], partition_errors(response["topics"])

    def delete_groups(self, groups: list[str]) -> dict[str, int]:
        """DeleteGroups v2; the error code per group."""
        response = self.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": groups})
        return {r["group_id"]: r["error_code"] for r in response["results"]}

    def list_groups(self) -> list[dict[str, Any]]:
        """Every group with its type (ListGroups v5: classic, consumer, share)."""
        return self.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})["groups"]

    def describe_share_group(self, group: str) -> dict[str, Any]:
        """ShareGroupDescribe v1 of one group (GROUP_ID_NOT_FOUND for a group of another type)."""
        body = {"group_ids": [group], "include_authorized_operations": False}
        return self.request(ApiKey.SHARE_GROUP_DESCRIBE, 1, body)["groups"][0]

    def share_group_offsets(self, group: str) -> dict[tuple[str, int], tuple[int, int]]:
        """(start offset, lag) of each share-partition of ``group`` (DescribeShareGroupOffsets v1)."""
        response = self.request(
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [{"group_id": group, "topics": None}]}
        )
        return {
            (topic["topic_name"], partition["partition_index"]): (partition["start_offset"], partition["lag"])
            for topic in response["groups"][0]["topics"]
            for partition in topic["partitions"]
        }

    def describe_group(self, group: str) -> dict[str, Any]:
        return self.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group]})["groups"][0]

    def committed_offsets(self, group: str) -> dict[tuple[str, int], int]:
        """Every committed offset of ``group`` (OffsetFetch v8, all topics)."""
        response = self.request(
            ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": group, "topics": None}], "require_stable": False}
        )
        committed = {}
        for topic in response["groups"][0]["topics"]:
            for partition in topic["partitions"]:
                committed[(topic["name"], partition["partition_index"])] = partition["committed_offset"]
        return committed

    def describe_scram_credentials(self, users: list[str] | None = None) -> dict[str, Any]:
        """DescribeUserScramCredentials v0: the named users' mechanisms and iterations (None: every user)."""
        body = {"users": None if users is None else [{"name": name} for name in users]}
        return self.request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, body)

    def alter_scram_credentials(
        self, upsertions: list[dict[str, Any]], deletions: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """AlterUserScramCredentials v0; returns one result per user (error_code, error_message)."""
        body = {"deletions": deletions, "upsertions": upsertions}
        return self.request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, body)["results"]
