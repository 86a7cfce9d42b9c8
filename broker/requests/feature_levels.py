"""The feature levels (KIP-584) this node supports and has finalized: ApiVersions reports them,
UpdateFeatures checks against them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.context import RequestContext

if TYPE_CHECKING:
    from wire.messages import ApiVersionsResponse

FINALIZED_EPOCH = 0  # levels never change while the broker runs


def finalized_levels(ctx: RequestContext) -> dict[str, int]:
    """Feature name -> finalized level, from what the configuration enables."""
    protocols = ctx.broker.config.get("group.coordinator.rebalance.protocols") or ""
    consumer = "consumer" in (p.strip() for p in protocols.split(","))
    levels = {"group.version": 1} if consumer else {}
    # Share groups (KIP-932) are production-ready from Kafka 4.2, which finalizes level 1 on new clusters.
    levels["share.version"] = 1
    # Streams groups (KIP-1071): production-ready from Kafka 4.2, level 1 on new clusters.
    if "streams" in (p.strip() for p in protocols.split(",")):
        levels["streams.version"] = 1
    return levels


SUPPORTED = {"group.version": (0, 1), "share.version": (0, 1), "streams.version": (0, 1)}


def add_api_versions_features(ctx: RequestContext, response: ApiVersionsResponse) -> None:
    """Put the feature fields of an ApiVersions v3+ response in ``response``."""
    response["supported_features"] = [
        {"name": name, "min_version": low, "max_version": high} for name, (low, high) in SUPPORTED.items()
    ]
    response["finalized_features_epoch"] = FINALIZED_EPOCH
    response["finalized_features"] = [
        {"name": name, "min_version_level": level, "max_version_level": level}
        for name, level in finalized_levels(ctx).items()
    ]
    response["zk_migration_ready"] = False
