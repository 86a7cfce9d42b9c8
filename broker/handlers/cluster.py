"""DescribeCluster: the admin client's view of the cluster (brokers, controller, id)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.acl_checks import cluster_operations_field
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.services.cluster_view import controller_id, live_nodes
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import DescribeClusterRequest, DescribeClusterResponse

BROKERS_ENDPOINT = 1  # KIP-919 endpoint type; 2 (controllers) is not served by a broker


async def handle_describe_cluster(
    ctx: RequestContext, request: DescribeClusterRequest
) -> DescribeClusterResponse:
    broker = ctx.broker
    if request.get("endpoint_type", BROKERS_ENDPOINT) != BROKERS_ENDPOINT:
        return {
            "error_code": ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            "error_message": "This broker only describes broker endpoints",
            "cluster_id": broker.cluster_id,
            "brokers": [],
        }
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "endpoint_type": BROKERS_ENDPOINT,
        "cluster_id": broker.cluster_id,
        "controller_id": controller_id(broker),
        "cluster_authorized_operations": cluster_operations_field(
            ctx, bool(request.get("include_cluster_authorized_operations"))
        ),
        "brokers": [
            {"broker_id": node.node_id, "host": node.host, "port": node.port, "rack": node.rack}
            for node in live_nodes(broker, ctx.listener_name)
        ],
    }


HANDLERS = {ApiKey.DESCRIBE_CLUSTER: Served(handle_describe_cluster)}
