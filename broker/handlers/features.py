"""Feature flags (KIP-584): what ApiVersions reports, and UpdateFeatures.

A feature is reported only where this broker implements what its level means, so a client that
gates behaviour on a finalized level is never misled: ``group.version`` 1 (KIP-848's consumer
protocol) when the ``consumer`` rebalance protocol is enabled. ``transaction.version`` is left
out (0): transaction version 2 (KIP-890) is not implemented, and clients use version 1 with a
broker that does not finalize 2. There is no metadata log, so no ``metadata.version``.

Levels follow from the configuration, so UpdateFeatures accepts a request that keeps every
level where it is (Kafka treats that as a success too) and refuses any change with
INVALID_UPDATE_VERSION.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.acl_checks import cluster_authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.feature_levels import SUPPORTED, finalized_levels
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        UpdateFeaturesRequest,
        UpdateFeaturesRequestFeatureUpdates,
        UpdateFeaturesResponse,
        UpdateFeaturesResponseResults,
    )


def _update_error(ctx: RequestContext, update: UpdateFeaturesRequestFeatureUpdates) -> str | None:
    name, level = update["feature"], update["max_version_level"]
    if name not in SUPPORTED:
        return f"Invalid update version {level} for feature {name}. The broker does not support this feature."
    current = finalized_levels(ctx).get(name, 0)
    if level == current:
        return None
    return (
        f"Invalid update version {level} for feature {name}: Odradek derives it from its configuration "
        f"and keeps it at {current} (group.version follows group.coordinator.rebalance.protocols)."
    )


async def handle_update_features(
    ctx: RequestContext, request: UpdateFeaturesRequest
) -> UpdateFeaturesResponse:
    results: list[UpdateFeaturesResponseResults] = []
    allowed = cluster_authorized(ctx)
    for update in request["feature_updates"]:
        message = _update_error(ctx, update) if allowed else None
        code = ErrorCode.NONE if message is None else ErrorCode.INVALID_UPDATE_VERSION
        results.append(
            {
                "feature": update["feature"],
                "error_code": code if allowed else ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": message,
            }
        )
    # v0-1 answer per feature; v2 has no per-feature results, so the first error is the answer.
    first_error = next((r for r in results if r["error_code"] != ErrorCode.NONE), None)
    if ctx.api_version < 2:
        first_error = None
    return {
        "throttle_time_ms": 0,
        "error_code": first_error["error_code"] if first_error else ErrorCode.NONE,
        "error_message": first_error["error_message"] if first_error else None,
        "results": results,
    }


HANDLERS = {ApiKey.UPDATE_FEATURES: Served(handle_update_features)}
