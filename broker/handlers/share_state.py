"""The share-group state APIs brokers send each other (KIP-932): Initialize, Read, Write,
Delete and ReadSummary ShareGroupState, answered by the share coordinator.

A share-partition's leader persists through the share coordinator of its key (``group:topic
id:partition`` hashed over ``__share_group_state``); when that is another broker, these are
the requests it sends (``broker.services.share.state_router``). They need CLUSTER_ACTION, as
Kafka's, and each partition is answered on its own: a key this broker does not coordinate is
NOT_COORDINATOR, a fenced writer FENCED_STATE_EPOCH or FENCED_LEADER_EPOCH.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.coordinators import installed
from broker.services.share.state_wire import batches_from_wire, batches_to_wire
from coordinator.share.state_coordinator import ShareCoordinator, ShareKey, ShareStateError
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        DeleteShareGroupStateRequest,
        DeleteShareGroupStateResponse,
        InitializeShareGroupStateRequest,
        InitializeShareGroupStateResponse,
        ReadShareGroupStateRequest,
        ReadShareGroupStateResponse,
        ReadShareGroupStateSummaryRequest,
        ReadShareGroupStateSummaryResponse,
        WriteShareGroupStateRequest,
        WriteShareGroupStateResponse,
    )


def _coordinator(ctx: RequestContext) -> ShareCoordinator:
    return installed(
        ctx.broker.share_coordinator,
        "broker.services.coordinators.share_coordinator.install_share_coordinator",
    )


def _each(
    request: Any,
    answer: Callable[[ShareKey, Any], dict[str, Any]],
    refused: Callable[[int, ErrorCode, str], Any],
) -> list[dict[str, Any]]:
    """Answer every partition of the request, an error for one not stopping the others."""
    results = []
    for topic in request["topics"]:
        partitions = []
        for partition in topic["partitions"]:
            key = (request["group_id"], bytes(topic["topic_id"]), partition["partition"])
            try:
                partitions.append(
                    {"partition": partition["partition"], "error_code": ErrorCode.NONE}
                    | answer(key, partition)
                )
            except ShareStateError as error:
                partitions.append(refused(partition["partition"], error.code, str(error)))
            except ValueError as error:  # a state batch no broker writes
                partitions.append(refused(partition["partition"], ErrorCode.INVALID_REQUEST, str(error)))
        results.append({"topic_id": topic["topic_id"], "partitions": partitions})
    return results


def _error(partition: int, code: ErrorCode, message: str) -> dict[str, Any]:
    return {"partition": partition, "error_code": code, "error_message": message}


async def _each_replicated(
    ctx: RequestContext, request: Any, answer: Callable[[ShareKey, Any], dict[str, Any]]
) -> list[dict[str, Any]]:
    """:func:`_each` for the writes, answered once ``__share_group_state``'s in-sync replicas
    have them (``ShareStateRouter.replicated``); if they do not, every partition written is
    COORDINATOR_NOT_AVAILABLE, so the share-partition leader retries rather than confirms."""
    results: list[dict[str, Any]] = []
    router = installed(
        ctx.broker.share_state, "broker.services.coordinators.share_coordinator.install_share_coordinator"
    )
    try:
        await router.replicated(lambda: results.extend(_each(request, answer, _error)))
    except ShareStateError as error:
        for topic in results:
            topic["partitions"] = [
                _error(p["partition"], error.code, str(error)) if p["error_code"] == ErrorCode.NONE else p
                for p in topic["partitions"]
            ]
    return results


async def handle_initialize_share_group_state(
    ctx: RequestContext, request: InitializeShareGroupStateRequest
) -> InitializeShareGroupStateResponse:
    coordinator = _coordinator(ctx)

    def initialize(key: ShareKey, partition: Any) -> dict[str, Any]:
        coordinator.initialize(key, partition["state_epoch"], partition["start_offset"])
        return {}

    return {"results": await _each_replicated(ctx, request, initialize)}  # type: ignore[typeddict-item]


async def handle_read_share_group_state(
    ctx: RequestContext, request: ReadShareGroupStateRequest
) -> ReadShareGroupStateResponse:
    coordinator = _coordinator(ctx)

    def read(key: ShareKey, partition: Any) -> dict[str, Any]:
        state = coordinator.read(key, partition["leader_epoch"])
        if state is None:
            return {"state_epoch": 0, "start_offset": -1, "state_batches": []}
        return {
            "state_epoch": state.state_epoch,
            "start_offset": state.start_offset,
            "state_batches": batches_to_wire(state.batches),
        }

    def refused(partition: int, code: ErrorCode, message: str) -> dict[str, Any]:
        return _error(partition, code, message) | {"state_epoch": 0, "start_offset": -1, "state_batches": []}

    return {"results": _each(request, read, refused)}  # type: ignore[typeddict-item]


async def handle_write_share_group_state(
    ctx: RequestContext, request: WriteShareGroupStateRequest
) -> WriteShareGroupStateResponse:
    coordinator = _coordinator(ctx)

    def write(key: ShareKey, partition: Any) -> dict[str, Any]:
        coordinator.write(
            key,
            partition["state_epoch"],
            partition["leader_epoch"],
            partition["start_offset"],
            batches_from_wire(partition["state_batches"]),
        )
        return {}

    return {"results": await _each_replicated(ctx, request, write)}  # type: ignore[typeddict-item]


async def handle_delete_share_group_state(
    ctx: RequestContext, request: DeleteShareGroupStateRequest
) -> DeleteShareGroupStateResponse:
    coordinator = _coordinator(ctx)

    def delete(key: ShareKey, _partition: Any) -> dict[str, Any]:
        coordinator.delete(key)
        return {}

    return {"results": await _each_replicated(ctx, request, delete)}  # type: ignore[typeddict-item]


async def handle_read_share_group_state_summary(
    ctx: RequestContext, request: ReadShareGroupStateSummaryRequest
) -> ReadShareGroupStateSummaryResponse:
    coordinator = _coordinator(ctx)
    empty = {"state_epoch": 0, "leader_epoch": -1, "start_offset": -1, "delivery_complete_count": -1}

    def summary(key: ShareKey, _partition: Any) -> dict[str, Any]:
        state = coordinator.summary(key)
        return dict(empty) if state is None else state._asdict()

    def refused(partition: int, code: ErrorCode, message: str) -> dict[str, Any]:
        return _error(partition, code, message) | empty

    return {"results": _each(request, summary, refused)}  # type: ignore[typeddict-item]


HANDLERS = {
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: Served(handle_initialize_share_group_state),
    ApiKey.READ_SHARE_GROUP_STATE: Served(handle_read_share_group_state),
    ApiKey.WRITE_SHARE_GROUP_STATE: Served(handle_write_share_group_state),
    ApiKey.DELETE_SHARE_GROUP_STATE: Served(handle_delete_share_group_state),
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: Served(handle_read_share_group_state_summary),
}
