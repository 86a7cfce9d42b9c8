"""Answering a request whose coordinator wrote to its internal topic only once the write holds.

Kafka's coordinators append with acks=all and answer after the append; here an offset commit,
a TxnOffsetCommit or a transaction call is answered once its ``__consumer_offsets`` /
``__transaction_state`` appends are synced where the flush policy says so
(``broker.services.storage.durability``) and, in a cluster, held by the in-sync replicas; a
failed write is answered with the error Kafka's coordinators translate it to. Also the split of
an offset API's topics by the topic operation, which both commits use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

import trio

from broker.requests.acl_checks import unauthorized_names
from broker.requests.context import PendingResponse, RequestContext
from broker.services.replication.acks import AckWait, acknowledged
from broker.services.security.acl_model import ResourceType
from broker.services.storage.durability import SyncTicket
from coordinator.transactions import TxnError
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.requests.node_services import NodeServices
    from wire.messages import OffsetCommitResponse, TxnOffsetCommitResponse


class NamedTopic(TypedDict):
    """What every offset API's request topic has: its name."""

    name: str


_Topic = TypeVar("_Topic", bound=NamedTopic)


def split_authorized_topics(
    ctx: RequestContext, topics: Sequence[_Topic]
) -> tuple[list[_Topic], list[_Topic]]:
    """The request topics the API's topic operation allows, and the refused ones (which the
    API answers TOPIC_AUTHORIZATION_FAILED)."""
    denied = unauthorized_names(ctx, ResourceType.TOPIC, (t["name"] for t in topics))
    allowed = [t for t in topics if t["name"] not in denied]
    refused = [t for t in topics if t["name"] in denied]
    return allowed, refused


@contextmanager
def replicated_writes(broker: NodeServices) -> Iterator[list[AckWait]]:
    """The coordinator's appends during the block, which a cluster acknowledges only once its
    in-sync replicas have them (Kafka's coordinator appends with acks=all); none on one node."""
    if broker.replicas is None:
        yield []
        return
    with broker.replicas.collecting() as collected:
        yield collected


# Kafka's coordinator answers a commit whose append failed with these instead (GroupMetadataManager).
_COMMIT_ERRORS = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
}


_Commit = TypeVar("_Commit", "OffsetCommitResponse", "TxnOffsetCommitResponse")


def answer_when_synced(
    ctx: RequestContext, must_sync: list[Any], answer: _Commit, acks: list[AckWait]
) -> _Commit | PendingResponse:
    """The ``answer`` of an offset commit, once the ``__consumer_offsets`` appends it made are
    synced where the policy says so (``must_sync``, from ``durability.collecting``) and, in a
    cluster, replicated to the in-sync replicas (``acks``, within ``offsets.commit.timeout.ms``);
    a failed write is every partition's error that had none."""
    if not must_sync and not acks:
        return answer
    ticket = ctx.broker.durability.ticket(must_sync) if must_sync else None
    timeout_s = ctx.broker.config.get_int("offsets.commit.timeout.ms") / 1000

    async def after_sync() -> _Commit:
        failure = await coordinator_writes_failure(ctx, ticket, acks, timeout_s)
        if failure is not None:
            for topic in answer["topics"]:
                for partition in topic["partitions"]:
                    if partition["error_code"] == ErrorCode.NONE:
                        partition["error_code"] = failure
        return answer

    if ticket is not None and not acks:
        return PendingResponse(after_sync, partial(ctx.broker.durability.done, ticket))
    return PendingResponse(after_sync)


async def coordinator_writes_failure(
    ctx: RequestContext, ticket: SyncTicket | None, acks: list[AckWait], timeout_s: float
) -> ErrorCode | None:
    """Wait for a coordinator's appends to be synced (``ticket`` from ``durability.ticket``, or
    None) and replicated (``acks``, within ``timeout_s``); None when they are, else the error its
    client is told (Kafka's coordinators translate a failed append so)."""
    durability, replicas = ctx.broker.durability, ctx.broker.replicas
    if ticket is not None and await durability.wait(ticket):
        return ErrorCode.NOT_COORDINATOR  # Kafka answers a failed append (KAFKA_STORAGE_ERROR) so
    if acks and replicas is not None:
        errors = await acknowledged(replicas, acks, trio.current_time() + timeout_s)
        if errors:
            code = next(iter(errors.values()))
            return _COMMIT_ERRORS.get(code, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return None


TXN_LOG_APPEND_TIMEOUT_S = 30.0  # Kafka's coordinator waits request.timeout.ms for its acks=all append


T = TypeVar("T")


async def durably(ctx: RequestContext, call: Callable[[], T]) -> T:
    """Run a transaction coordinator call, then wait until what it wrote to
    ``__transaction_state`` (and, ending a transaction, the markers written here) is synced
    under the flush policy and, in a cluster, held by the in-sync replicas, as Kafka's
    coordinator appends with acks=all before it answers.  ``TxnError`` with the coordinator's
    translation of a failed append (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE: clients retry)."""
    durability = ctx.broker.durability
    with durability.collecting() as must_sync, replicated_writes(ctx.broker) as acks:
        result = call()
    ticket = durability.ticket(must_sync) if must_sync else None
    failure = await coordinator_writes_failure(ctx, ticket, acks, TXN_LOG_APPEND_TIMEOUT_S)
    if failure is not None:
        raise TxnError(failure)
    return result
