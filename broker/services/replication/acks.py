"""acks=all: a Produce is answered once the high watermark covers its appends (Kafka's
DelayedProduce), each partition waiting on its own progress event rather than polling."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

import trio

from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.services.replication.leader_state import LeaderState
    from log.partition_log import PartitionLog

PartitionKey = tuple[str, int]


class LeaderReplicas(Protocol):
    """What waiting for acks asks of the replica manager (``ReplicaManager``)."""

    def leader(self, key: PartitionKey) -> LeaderState | None: ...

    async def replicated(self, key: PartitionKey, required_offset: int, min_insync: int) -> ErrorCode: ...


class AckWait(NamedTuple):
    """One partition of an acks=all Produce: the offset the high watermark must reach."""

    key: PartitionKey
    required_offset: int
    min_insync: int


def ack_wait(key: PartitionKey, partition_log: PartitionLog) -> AckWait:
    """What an append just made to ``partition_log`` waits for: everything up to its log end."""
    return AckWait(key, partition_log.log_end_offset, partition_log.config.min_insync_replicas)


def min_isr_refusal(replicas: LeaderReplicas, key: PartitionKey, min_insync: int) -> str | None:
    """Kafka's NOT_ENOUGH_REPLICAS message when the ISR is below ``min.insync.replicas``."""
    state = replicas.leader(key)
    if state is None or len(state.isr) >= state.effective_min_isr(min_insync):
        return None
    shown = ", ".join(str(r) for r in state.isr)
    return (
        f"The size of the current ISR Set({shown}) is insufficient to satisfy the min.isr "
        f"requirement of {min_insync} for partition {key[0]}-{key[1]}"
    )


async def acknowledged(
    replicas: LeaderReplicas, waits: list[AckWait], deadline: float
) -> dict[PartitionKey, ErrorCode]:
    """Wait until every partition's high watermark covers its append, up to ``deadline`` (trio
    time, the request's ``timeout_ms``); the partitions that may not be acknowledged and why
    (REQUEST_TIMED_OUT for those still waiting at the deadline)."""
    errors: dict[PartitionKey, ErrorCode] = {}
    pending = list(waits)
    with trio.move_on_at(deadline):
        while pending:
            wait = pending[0]
            code = await replicas.replicated(wait.key, wait.required_offset, wait.min_insync)
            if code != ErrorCode.NONE:
                errors[wait.key] = code
            pending.pop(0)
    for wait in pending:
        errors[wait.key] = ErrorCode.REQUEST_TIMED_OUT
    return errors
