"""A bootstrap connection that routes requests as a Kafka client does.

Kafka answers Produce, Fetch and ListOffsets only on a partition's leader, and a group's requests
only on its coordinator: any other broker says NOT_LEADER_OR_FOLLOWER or NOT_COORDINATOR.  The
``odradek`` commands talk to one ``--bootstrap`` address, which against a cluster (or
``serve --processes``, where one address stands for several brokers) is rarely the broker they
need.  :class:`RoutedConnection` keeps that address's connection for everything any broker
answers and opens one more per broker it must reach, found through Metadata and FindCoordinator,
as a client's metadata cache does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from broker.client.admin_client import READ_UNCOMMITTED, KafkaConnection
from broker.client.security import PLAINTEXT, ClientSecurity
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

T = TypeVar("T")
STALE_LEADER = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
STALE_COORDINATOR = (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE)
RETRIES = 5
RETRY_BACKOFF_S = 0.2


class RoutedConnection(KafkaConnection):
    """The bootstrap broker's connection; partition and group requests go where Kafka serves them."""

    def __init__(
        self,
        bootstrap: str,
        timeout: float = 15.0,
        client_id: str = "odradek-cli",
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        super().__init__(bootstrap, timeout, client_id, security)
        self._bootstrap = bootstrap
        self._settings = (timeout, client_id, security)
        self._connections: dict[str, KafkaConnection] = {}
        self._nodes: dict[int, str] = {}
        self._leaders: dict[tuple[str, int], int] = {}
        self._coordinators: dict[str, KafkaConnection] = {}

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        super().close()

    def _at(self, address: str | None) -> KafkaConnection:
        """The connection to ``address`` (this one for the bootstrap address or an unknown one)."""
        if address is None or address == self._bootstrap:
            return self
        if address not in self._connections:
            self._connections[address] = KafkaConnection(address, *self._settings)
        return self._connections[address]

    def _learn(self, topic: str) -> None:
        answer = KafkaConnection.metadata(self, [topic])
        self._nodes.update({b["node_id"]: f"{b['host']}:{b['port']}" for b in answer["brokers"]})
        for entry in answer["topics"]:
            for partition in entry["partitions"]:
                self._leaders[(entry["name"], partition["partition_index"])] = partition["leader_id"]

    def leader(self, topic: str, partition: int) -> KafkaConnection:
        """The connection to the partition's leader (as last learnt)."""
        if (topic, partition) not in self._leaders:
            self._learn(topic)
        return self._at(self._nodes.get(self._leaders.get((topic, partition), -1)))

    def _by_leader(self, topic: str, partitions: list[int]) -> list[tuple[KafkaConnection, list[int]]]:
        grouped: dict[int, tuple[KafkaConnection, list[int]]] = {}
        for partition in partitions:
            connection = self.leader(topic, partition)
            grouped.setdefault(id(connection), (connection, []))[1].append(partition)
        return list(grouped.values())

    def _retried(self, topic: str, attempt: Callable[[], T], stale: Callable[[T], bool]) -> T:
        """``attempt``, again after learning the topic's leaders anew while its answer is stale
        (a leader moved, or the broker asked has not applied the topic yet)."""
        for _ in range(RETRIES):
            answer = attempt()
            if not stale(answer):
                return answer
            time.sleep(RETRY_BACKOFF_S)
            self._learn(topic)
        return answer

    def produce(self, topic: str, partition: int, batch: bytes, acks: int = -1) -> dict[str, Any]:
        return self._retried(
            topic,
            lambda: KafkaConnection.produce(self.leader(topic, partition), topic, partition, batch, acks),
            lambda answer: answer["error_code"] in STALE_LEADER,
        )

    def list_offsets(
        self, topic: str, partitions: list[int], timestamp: int, isolation_level: int = READ_UNCOMMITTED
    ) -> dict[int, int]:
        found: dict[int, int] = {}
        for connection, group in self._by_leader(topic, partitions):
            found.update(KafkaConnection.list_offsets(connection, topic, group, timestamp, isolation_level))
        return found

    def fetch(
        self, topic: str, positions: dict[int, int], max_wait_ms: int, isolation_level: int = READ_UNCOMMITTED
    ) -> list[dict[str, Any]]:
        answers: list[dict[str, Any]] = []
        stale = False
        for connection, group in self._by_leader(topic, list(positions)):
            wanted = {p: positions[p] for p in group}
            got = KafkaConnection.fetch(connection, topic, wanted, max_wait_ms, isolation_level)
            stale |= any(a["error_code"] in STALE_LEADER for a in got)
            answers += [a for a in got if a["error_code"] not in STALE_LEADER]
        if stale:  # asked again next poll, of the leaders learnt now
            self._learn(topic)
        return answers

    def coordinator(self, group: str) -> KafkaConnection:
        """The connection to ``group``'s coordinator (FindCoordinator v4, key type GROUP)."""
        if group not in self._coordinators:
            body = {"key_type": 0, "coordinator_keys": [group]}
            (found,) = KafkaConnection.request(self, ApiKey.FIND_COORDINATOR, 4, body)["coordinators"]
            address = f"{found['host']}:{found['port']}" if found["error_code"] == ErrorCode.NONE else None
            self._coordinators[group] = self._at(address)
        return self._coordinators[group]

    def _of_group(self, group: str, attempt: Callable[[KafkaConnection], T], error: Callable[[T], int]) -> T:
        """``attempt`` on the group's coordinator, found again while the answer says it moved."""
        for _ in range(RETRIES):
            answer = attempt(self.coordinator(group))
            if error(answer) not in STALE_COORDINATOR:
                return answer
            self._coordinators.pop(group, None)
            time.sleep(RETRY_BACKOFF_S)
        return answer

    def committed_offsets(self, group: str) -> dict[tuple[str, int], int]:
        return KafkaConnection.committed_offsets(self.coordinator(group), group)

    def commit_offsets(self, group: str, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        return self._of_group(
            group,
            lambda c: KafkaConnection.commit_offsets(c, group, offsets),
            lambda errors: next((code for code in errors.values() if code), ErrorCode.NONE),
        )

    def delete_offsets(
        self, group: str, partitions: list[tuple[str, int]]
    ) -> tuple[int, dict[tuple[str, int], int]]:
        return self._of_group(
            group, lambda c: KafkaConnection.delete_offsets(c, group, partitions), lambda answer: answer[0]
        )

    def delete_groups(self, groups: list[str]) -> dict[str, int]:
        results: dict[str, int] = {}
        for group in groups:
            results |= self._deleted(group)
        return results

    def _deleted(self, group: str) -> dict[str, int]:
        return self._of_group(
            group, lambda c: KafkaConnection.delete_groups(c, [group]), lambda answer: answer[group]
        )

    def describe_group(self, group: str) -> dict[str, Any]:
        return self._of_group(
            group, lambda c: KafkaConnection.describe_group(c, group), lambda answer: answer["error_code"]
        )

    def describe_share_group(self, group: str) -> dict[str, Any]:
        return self._of_group(
            group,
            lambda c: KafkaConnection.describe_share_group(c, group),
            lambda answer: answer["error_code"],
        )

    def share_group_offsets(self, group: str) -> dict[tuple[str, int], tuple[int, int]]:
        return KafkaConnection.share_group_offsets(self.coordinator(group), group)
