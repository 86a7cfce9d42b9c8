"""Reaching the share coordinator of a share-partition's key: this broker's, or another's.

On a single node the share coordinator is local. In a cluster a key's coordinator is the
leader of its partition of ``__share_group_state``, which may be another broker: then the
share-group state APIs go to it (``broker/handlers/share_state.py`` answers them there), as
Kafka's brokers' persister does. An unreachable or changing coordinator is an error the
caller answers with (clients retry), never a wait without bound.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

import trio

from broker.services.replication.acks import AckWait, LeaderReplicas, acknowledged
from broker.services.share.state_wire import batches_from_wire, batches_to_wire
from coordinator.share.model import StateBatch
from coordinator.share.state_coordinator import (
    SHARE_STATE_TOPIC,
    ShareCoordinator,
    ShareKey,
    ShareState,
    ShareStateError,
    ShareSummary,
)
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.services.cluster.node import ClusterNode

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 10.0
WRITE_TIMEOUT_S = 5.0
"""How long a state write waits for the in-sync replicas (Kafka's share.coordinator.write.timeout.ms)."""


class WriteReplicas(LeaderReplicas, Protocol):
    """The replica manager, as a state write waits on it (``ReplicaManager``)."""

    def collecting(self) -> AbstractContextManager[list[AckWait]]: ...


STATE_API_VERSION = 0
WRITE_VERSION = 1
SUMMARY_VERSION = 1


class ShareStateRouter:
    """The share coordinator of any key, as one object (a ``ShareStatePort``)."""

    def __init__(
        self,
        coordinator: ShareCoordinator,
        cluster: ClusterNode | None,
        node_id: int,
        replicas: Callable[[], WriteReplicas | None] = lambda: None,
    ) -> None:
        self.coordinator = coordinator
        self._cluster = cluster
        self._node_id = node_id
        self._replicas = replicas

    async def replicated(self, write: Callable[[], None]) -> None:
        """Run a write of this broker's share coordinator, returning once the in-sync replicas
        of ``__share_group_state`` have it, as Kafka's share coordinator appends with acks=all:
        a state this broker confirmed is not lost with it. A write the replicas do not take in
        time is COORDINATOR_NOT_AVAILABLE (retried by the caller, never confirmed)."""
        replicas = self._replicas()
        if replicas is None:
            write()
            return
        with replicas.collecting() as waits:
            write()
        errors = await acknowledged(replicas, waits, trio.current_time() + WRITE_TIMEOUT_S)
        if errors:
            (partition, code), *_rest = errors.items()
            raise ShareStateError(
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                f"{partition[0]}-{partition[1]} did not reach its in-sync replicas ({code.name})",
            )

    @property
    def clustered(self) -> bool:
        return self._cluster is not None

    async def _remote(self, key: ShareKey) -> int | None:
        """The broker coordinating ``key`` when it is not this one, else None. The share
        coordinator's topic is created on first use (as Kafka does); until it has a leader
        the answer is COORDINATOR_NOT_AVAILABLE, which clients retry."""
        cluster = self._cluster
        if cluster is None or self.coordinator.key_availability(key) is not ErrorCode.NOT_COORDINATOR:
            return None
        await cluster.ensure_internal_topic(SHARE_STATE_TOPIC)
        record = cluster.metadata.image.partition(SHARE_STATE_TOPIC, self.coordinator.key_partition(key))
        if record is None or record.leader < 0:
            raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "The share coordinator has no leader.")
        if record.leader == self._node_id:
            # This broker leads the partition but has not claimed it yet (a moment after an election).
            raise ShareStateError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "The share coordinator is loading.")
        return record.leader

    async def _ask(
        self, node: int, api: ApiKey, version: int, key: ShareKey, partition: dict[str, Any]
    ) -> dict[str, Any]:
        if self._cluster is None:
            raise RuntimeError("only a cluster member asks another broker")
        group_id, topic_id, index = key
        body = {
            "group_id": group_id,
            "topics": [{"topic_id": topic_id, "partitions": [{"partition": index, **partition}]}],
        }
        try:
            response = await self._cluster.peers.request(node, api, version, body, REQUEST_TIMEOUT_S)
            answer = response["results"][0]["partitions"][0]
        except (ConnectionError, KeyError, IndexError) as error:
            log.warning("share coordinator %d did not answer %s: %s", node, api.api_name, error)
            raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"broker {node}: {error}") from error
        code = _code(answer["error_code"])
        if code is not ErrorCode.NONE:
            raise ShareStateError(code, answer.get("error_message") or code.name)
        return answer

    async def read(self, key: ShareKey, leader_epoch: int) -> ShareState | None:
        node = await self._remote(key)
        if node is None:
            return self.coordinator.read(key, leader_epoch)
        answer = await self._ask(
            node, ApiKey.READ_SHARE_GROUP_STATE, STATE_API_VERSION, key, {"leader_epoch": leader_epoch}
        )
        if answer["start_offset"] < 0:
            return None
        return ShareState(
            answer["state_epoch"],
            leader_epoch,
            answer["start_offset"],
            batches_from_wire(answer["state_batches"]),
        )

    async def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> None:
        node = await self._remote(key)
        if node is None:
            await self.replicated(lambda: self.coordinator.initialize(key, state_epoch, start_offset))
            return
        await self._ask(
            node,
            ApiKey.INITIALIZE_SHARE_GROUP_STATE,
            STATE_API_VERSION,
            key,
            {"state_epoch": state_epoch, "start_offset": start_offset},
        )

    async def write(
        self, key: ShareKey, state_epoch: int, leader_epoch: int, start_offset: int, batches: list[StateBatch]
    ) -> None:
        node = await self._remote(key)
        if node is None:
            await self.replicated(
                lambda: self.coordinator.write(key, state_epoch, leader_epoch, start_offset, batches)
            )
            return
        await self._ask(
            node,
            ApiKey.WRITE_SHARE_GROUP_STATE,
            WRITE_VERSION,
            key,
            {
                "state_epoch": state_epoch,
                "leader_epoch": leader_epoch,
                "start_offset": start_offset,
                "delivery_complete_count": -1,
                "state_batches": batches_to_wire(batches),
            },
        )

    async def delete(self, key: ShareKey) -> None:
        node = await self._remote(key)
        if node is None:
            await self.replicated(lambda: self.coordinator.delete(key))
            return
        await self._ask(node, ApiKey.DELETE_SHARE_GROUP_STATE, STATE_API_VERSION, key, {})

    async def summary(self, key: ShareKey) -> ShareSummary | None:
        node = await self._remote(key)
        if node is None:
            return self.coordinator.summary(key)
        answer = await self._ask(
            node, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, SUMMARY_VERSION, key, {"leader_epoch": -1}
        )
        if answer["start_offset"] < 0:
            return None
        return ShareSummary(
            answer["state_epoch"],
            answer["leader_epoch"],
            answer["start_offset"],
            answer.get("delivery_complete_count", -1),
        )

    async def with_state(self, group_id: str, candidates: list[tuple[bytes, int]]) -> list[ShareKey]:
        """Which of ``group_id``'s share-partitions among ``candidates`` (topic id, partition)
        have state: this broker's share coordinator answers for its keys, every other share
        coordinator once for all of its keys (one ReadShareGroupStateSummary each). A
        coordinator that cannot answer is left out, with a warning."""
        found: list[ShareKey] = []
        remote: dict[int, list[ShareKey]] = {}
        for topic_id, index in candidates:
            key = (group_id, topic_id, index)
            try:
                node = await self._remote(key)
            except ShareStateError:
                continue  # no coordinator for it now: no state to find either
            if node is None:
                if self.coordinator.key_availability(key) is ErrorCode.NONE and self.coordinator.summary(key):
                    found.append(key)
            else:
                remote.setdefault(node, []).append(key)
        for node, keys in remote.items():
            found += await self._with_state_at(node, group_id, keys)
        return found

    async def _with_state_at(self, node: int, group_id: str, keys: list[ShareKey]) -> list[ShareKey]:
        if self._cluster is None:
            return []
        by_topic: dict[bytes, list[dict[str, int]]] = {}
        for _group, topic_id, index in keys:
            by_topic.setdefault(topic_id, []).append({"partition": index, "leader_epoch": -1})
        body = {
            "group_id": group_id,
            "topics": [{"topic_id": t, "partitions": p} for t, p in by_topic.items()],
        }
        try:
            response = await self._cluster.peers.request(
                node, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, SUMMARY_VERSION, body, REQUEST_TIMEOUT_S
            )
        except ConnectionError as error:
            log.warning("share coordinator %d did not list group %s's state: %s", node, group_id, error)
            return []
        return [
            (group_id, bytes(result["topic_id"]), partition["partition"])
            for result in response["results"]
            for partition in result["partitions"]
            if partition["error_code"] == ErrorCode.NONE and partition["start_offset"] >= 0
        ]


def _code(value: int) -> ErrorCode:
    try:
        return ErrorCode(value)
    except ValueError:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
