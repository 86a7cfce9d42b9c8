"""Reaching the node's coordinators from a request, and the error codes as each version spells them.

What the group, offset, transaction and produce handlers share about coordinators: the
installed coordinator (None would be a wiring bug), a member's host as Kafka reports it, and
the version rules of transactional errors (KIP-588's PRODUCER_FENCED, KIP-890's
TRANSACTION_ABORTABLE) that Produce, TxnOffsetCommit and the transaction APIs all apply.
"""

from __future__ import annotations

from typing import TypeVar

from broker.requests.context import RequestContext
from coordinator.coordinator import GroupCoordinator
from coordinator.transactions import TransactionCoordinator, TxnError
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

_Coordinator = TypeVar("_Coordinator")


def installed(coordinator: _Coordinator | None, installer: str) -> _Coordinator:
    """A coordinator of the broker; None means ``installer`` never ran, a wiring bug."""
    if coordinator is None:
        raise RuntimeError(f"{installer} was not called")
    return coordinator


def coordinator_of(ctx: RequestContext) -> GroupCoordinator:
    return installed(
        ctx.broker.coordinator, "broker.services.coordinators.group_timers.install_group_coordinator"
    )


def client_host(ctx: RequestContext) -> str:
    """Kafka reports a member's host as Java's ``InetAddress.toString()``: ``/127.0.0.1``."""
    return "/" + ctx.client_address.rpartition(":")[0].strip("[]")


# The first version of each API whose clients are told PRODUCER_FENCED; Produce and
# TxnOffsetCommit (absent) always say INVALID_PRODUCER_EPOCH, as Kafka's partition leader does.
PRODUCER_FENCED_SINCE: dict[int, int] = {
    ApiKey.INIT_PRODUCER_ID: 4,
    ApiKey.ADD_PARTITIONS_TO_TXN: 2,
    ApiKey.ADD_OFFSETS_TO_TXN: 2,
    ApiKey.END_TXN: 2,
}


# From these versions (transaction version 2) a write adds its partition to the transaction
# itself; before them the partition must have been added, which is verified (KIP-890), and a
# failed verification is TRANSACTION_ABORTABLE after the last version listed in the second table.
FIRST_IMPLICIT_ADD_VERSION: dict[int, int] = {ApiKey.PRODUCE: 12, ApiKey.TXN_OFFSET_COMMIT: 5}


LAST_INVALID_TXN_STATE_VERSION: dict[int, int] = {ApiKey.PRODUCE: 10, ApiKey.TXN_OFFSET_COMMIT: 3}


def transactions_of(ctx: RequestContext) -> TransactionCoordinator:
    return installed(
        ctx.broker.transactions,
        "broker.services.coordinators.txn_coordinator.install_transaction_coordinator",
    )


def error_for(ctx: RequestContext, failure: TxnError | ErrorCode) -> ErrorCode:
    """The code as this request's version spells it."""
    code = failure.code if isinstance(failure, TxnError) else failure
    api_key = ctx.header.api_key
    if code is ErrorCode.PRODUCER_FENCED and ctx.api_version < PRODUCER_FENCED_SINCE.get(api_key, 1 << 15):
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code is ErrorCode.TRANSACTION_ABORTABLE and ctx.api_version <= LAST_INVALID_TXN_STATE_VERSION.get(
        api_key, -1
    ):
        return ErrorCode.INVALID_TXN_STATE
    return code


def joined_transaction(
    ctx: RequestContext, transactional_id: str | None, producer: tuple[int, int], partition: tuple[str, int]
) -> ErrorCode:
    """Whether a transactional write (Produce, TxnOffsetCommit) may go to ``partition``: added
    to the transaction by this write (transaction version 2), or verified to be in it."""
    coordinator = transactions_of(ctx)
    if coordinator.ongoing_with(*producer, partition):
        return ErrorCode.NONE
    if transactional_id is None:
        return error_for(ctx, ErrorCode.TRANSACTION_ABORTABLE)
    if coordinator.availability(transactional_id) is ErrorCode.NOT_COORDINATOR:
        # Another broker coordinates it (a cluster): a Produce asked it already when it had to
        # (broker.txn_verification); a TxnOffsetCommit is not checked there (docs/NOTES.md).
        return ErrorCode.NONE
    try:
        if ctx.api_version >= FIRST_IMPLICIT_ADD_VERSION[ctx.header.api_key]:
            coordinator.add_partitions(transactional_id, *producer, [partition])
            return ErrorCode.NONE
        verdict = coordinator.verify_partitions(transactional_id, *producer, [partition])[partition]
    except TxnError as failure:
        return error_for(ctx, failure)
    return error_for(ctx, verdict)
