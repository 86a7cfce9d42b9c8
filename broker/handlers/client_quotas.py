"""DescribeClientQuotas and AlterClientQuotas: the quotas ``kafka-configs`` shows and sets.

Describe needs DESCRIBE_CONFIGS on the cluster (Kafka's KafkaApis), Alter needs ALTER_CONFIGS
on it (ControllerApis); the filters, validation and messages are the controller's
(``broker.state.quota_store``).  An alteration is checked per entity: an entity with an error
changes nothing, the others are stored together, durably, before the answer (unless
``validate_only``); when they cannot be stored they are answered REQUEST_TIMED_OUT, as Kafka
does when its controller cannot commit in time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.acl_checks import cluster_authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.state.documents import DocumentUnavailable
from broker.state.quota_store import (
    MAX_ALTERATIONS,
    Alteration,
    Entity,
    QuotaError,
    alteration_of,
    describe_entity,
)
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        AlterClientQuotasRequest,
        AlterClientQuotasResponse,
        AlterClientQuotasResponseEntries,
        DescribeClientQuotasRequest,
        DescribeClientQuotasResponse,
        DescribeClientQuotasResponseEntity,
        DescribeClientQuotasResponseEntries,
    )

_CLUSTER_DENIED = "Cluster authorization failed."  # Kafka's message for CLUSTER_AUTHORIZATION_FAILED


def _entity_body(entity: Entity) -> list[DescribeClientQuotasResponseEntity]:
    return [{"entity_type": entity_type, "entity_name": name} for entity_type, name in entity]


async def handle_describe_client_quotas(
    ctx: RequestContext, request: DescribeClientQuotasRequest
) -> DescribeClientQuotasResponse:
    if not cluster_authorized(ctx):
        return _describe_error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_DENIED, None)
    try:
        matched = ctx.broker.quotas.store.describe(request["components"], request["strict"])
    except QuotaError as exc:
        return _describe_error(exc.code, str(exc), [])
    entries: list[DescribeClientQuotasResponseEntries] = [
        {
            "entity": _entity_body(entity),
            "values": [{"key": key, "value": value} for key, value in values.items()],
        }
        for entity, values in matched
    ]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "entries": entries}


def _describe_error(
    code: ErrorCode, message: str, entries: list[DescribeClientQuotasResponseEntries] | None
) -> DescribeClientQuotasResponse:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "entries": entries}


def _result(
    entity: list[DescribeClientQuotasResponseEntity], code: ErrorCode, message: str | None
) -> AlterClientQuotasResponseEntries:
    return {"error_code": code, "error_message": message, "entity": entity}


async def handle_alter_client_quotas(
    ctx: RequestContext, request: AlterClientQuotasRequest
) -> AlterClientQuotasResponse:
    entries = request["entries"]
    if not cluster_authorized(ctx):
        denied = [
            _result(e["entity"], ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_DENIED) for e in entries
        ]
        return {"throttle_time_ms": 0, "entries": denied}
    if len(entries) > MAX_ALTERATIONS:
        message = f"Cannot alter quotas of more than {MAX_ALTERATIONS} entities in a single request."
        return {
            "throttle_time_ms": 0,
            "entries": [_result(e["entity"], ErrorCode.INVALID_REQUEST, message) for e in entries],
        }
    results: list[AlterClientQuotasResponseEntries] = []
    valid: list[Alteration] = []
    seen: set[Entity] = set()
    for entry in entries:
        try:
            alteration = alteration_of(entry)
            if alteration.entity in seen:
                raise QuotaError(f"Ignoring duplicate entity {describe_entity(alteration.entity)}")
            seen.add(alteration.entity)
        except QuotaError as exc:
            results.append(_result(entry["entity"], exc.code, str(exc)))
            continue
        valid.append(alteration)
        results.append(_result(entry["entity"], ErrorCode.NONE, None))
    if valid and not request["validate_only"]:
        try:
            await ctx.broker.quotas.store.apply(valid)
        except (QuotaError, DocumentUnavailable) as exc:
            code = exc.code if isinstance(exc, QuotaError) else ErrorCode.REQUEST_TIMED_OUT
            results = [
                r if r["error_code"] != ErrorCode.NONE else _result(r["entity"], code, str(exc))
                for r in results
            ]
    return {"throttle_time_ms": 0, "entries": results}


HANDLERS = {
    ApiKey.DESCRIBE_CLIENT_QUOTAS: Served(handle_describe_client_quotas),
    ApiKey.ALTER_CLIENT_QUOTAS: Served(handle_alter_client_quotas),
}
