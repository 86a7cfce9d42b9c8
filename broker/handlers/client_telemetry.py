"""GetTelemetrySubscriptions and PushTelemetry (KIP-714): clients fetch their metrics
subscription and push what it asks for; :mod:`broker.services.telemetry.client_metrics_manager` answers both.

Kafka advertises these two APIs only while a telemetry exporter plugin is configured; Odradek
always has its own receiver (it counts pushes per client instance), so it always serves them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.services.telemetry.client_metrics_manager import ClientIdentity
from wire.api_keys import ApiKey

if TYPE_CHECKING:
    from wire.messages import (
        GetTelemetrySubscriptionsRequest,
        GetTelemetrySubscriptionsResponse,
        PushTelemetryRequest,
        PushTelemetryResponse,
    )


def client_identity(ctx: RequestContext) -> ClientIdentity:
    """The request's client as subscriptions match it: header client id, software, address."""
    address, _, port = ctx.client_address.rpartition(":")
    software = ctx.broker.client_software.of(ctx.client_address)
    return ClientIdentity(ctx.header.client_id or "", software.name, software.version, address, port)


async def handle_get_telemetry_subscriptions(
    ctx: RequestContext, request: GetTelemetrySubscriptionsRequest
) -> GetTelemetrySubscriptionsResponse:
    return ctx.broker.client_telemetry.get_subscriptions(request, client_identity(ctx))


async def handle_push_telemetry(ctx: RequestContext, request: PushTelemetryRequest) -> PushTelemetryResponse:
    return ctx.broker.client_telemetry.push(request, client_identity(ctx))


HANDLERS = {
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: Served(handle_get_telemetry_subscriptions),
    ApiKey.PUSH_TELEMETRY: Served(handle_push_telemetry),
}
