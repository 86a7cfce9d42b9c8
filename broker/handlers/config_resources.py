"""ListConfigResources (key 74; KIP-1142, ListClientMetricsResources before Kafka 4.1).

Version 0 lists client metrics subscriptions only; version 1 lists the config resources of the
types asked for (none: every type), in Kafka's order: groups, client metrics subscriptions,
brokers, topics.  A type outside TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS and GROUP fails
the whole request with UNSUPPORTED_VERSION, as in Kafka.  One difference: Kafka also lists
each broker as a BROKER_LOGGER resource, which Odradek does not list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.acl_checks import cluster_authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import ListConfigResourcesRequest, ListConfigResourcesResponse

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
SUPPORTED_TYPES = (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)  # Kafka's listing order


def resources_of(ctx: RequestContext, resource_type: int) -> list[str]:
    """The names of this broker's config resources of one type."""
    if resource_type == CLIENT_METRICS:
        return ctx.broker.client_telemetry.store.names()
    if resource_type == BROKER:
        return [str(ctx.broker.node_id)]
    if resource_type == TOPIC:
        return sorted(topic.name for topic in ctx.broker.topics.all())
    if resource_type == GROUP:
        return _group_resources(ctx)
    return []


def _group_resources(ctx: RequestContext) -> list[str]:
    """Groups that exist or carry configs of their own, as Kafka lists them (``kafka-configs
    --entity-type groups`` describes only a group listed here)."""
    names = set(ctx.broker.dynamic_configs.groups)
    coordinator = ctx.broker.coordinator
    if coordinator is not None:
        error, groups = coordinator.list_groups([], [])
        if error == ErrorCode.NONE:
            names.update(group["group_id"] for group in groups)
    return sorted(names)


async def handle_list_config_resources(
    ctx: RequestContext, request: ListConfigResourcesRequest
) -> ListConfigResourcesResponse:
    wanted = set(request["resource_types"] or SUPPORTED_TYPES) if ctx.api_version >= 1 else {CLIENT_METRICS}
    if not cluster_authorized(ctx):
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "config_resources": [],
        }
    if not wanted <= set(SUPPORTED_TYPES):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION, "config_resources": []}
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "config_resources": [
            {"resource_name": name, "resource_type": kind}
            for kind in SUPPORTED_TYPES
            if kind in wanted
            for name in resources_of(ctx, kind)
        ],
    }


HANDLERS = {ApiKey.LIST_CONFIG_RESOURCES: Served(handle_list_config_resources)}
