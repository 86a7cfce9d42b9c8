"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics and the broker.

Values, sources and synonyms are reported as Kafka reports them: a topic key shows its
override (DYNAMIC_TOPIC_CONFIG), else the broker's setting of its synonym
(STATIC_BROKER_CONFIG), else the default (DEFAULT_CONFIG), and with ``include_synonyms``
the whole chain.  Broker settings come from server.properties and are read-only here:
changing them at runtime is refused with a message saying where to set them instead.
"""

from __future__ import annotations

from typing import Any

from broker.api_support import Served
from broker.authorization import config_refusal
from broker.config import BrokerConfig
from broker.config_defs import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigSource, ConfigType
from broker.context import RequestContext
from broker.topic_admin import TopicError, validate_configs
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

TOPIC, BROKER = 2, 4
_KAFKA_DEFAULTS = BrokerConfig({})  # what each key would be with an empty server.properties
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def config_entry(
    name: str,
    value: str | None,
    source: ConfigSource,
    type_: ConfigType,
    doc: str,
    synonyms: list[dict[str, Any]],
    read_only: bool,
) -> dict[str, Any]:
    return {
        "name": name,
        "value": value,
        "read_only": read_only,
        "config_source": source,
        "is_sensitive": False,
        "synonyms": synonyms,
        "config_type": type_,
        "documentation": doc,
    }


def describe_topic(
    ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool
) -> list[dict[str, Any]]:
    broker_config = ctx.broker.config
    info = ctx.broker.topics.get(name)
    overrides = info.configs if info else {}
    entries = []
    for key, definition in sorted(TOPIC_CONFIGS.items()):
        if keys is not None and key not in keys:
            continue
        chain = []
        if key in overrides:
            chain.append({"name": key, "value": overrides[key], "source": ConfigSource.DYNAMIC_TOPIC_CONFIG})
        broker_key = definition.broker_synonym
        if broker_key in broker_config.explicit:
            chain.append(
                {
                    "name": broker_key,
                    "value": broker_config.explicit[broker_key],
                    "source": ConfigSource.STATIC_BROKER_CONFIG,
                }
            )
        default = _KAFKA_DEFAULTS.get(broker_key) or definition.default
        chain.append({"name": broker_key, "value": default, "source": ConfigSource.DEFAULT_CONFIG})
        top = chain[0]
        entries.append(
            config_entry(
                key,
                top["value"],
                top["source"],
                definition.type,
                definition.doc,
                chain if synonyms else [],
                False,
            )
        )
    return entries


def describe_broker(ctx: RequestContext, keys: list[str] | None, synonyms: bool) -> list[dict[str, Any]]:
    config = ctx.broker.config
    entries = []
    for key, definition in sorted(BROKER_CONFIGS.items()):
        if keys is not None and key not in keys:
            continue
        source = config.source(key)
        value = config.get(key)
        chain = [{"name": key, "value": value, "source": source}] if synonyms else []
        entries.append(config_entry(key, value, source, definition.type, definition.doc, chain, True))
    return entries


def resource_error(ctx: RequestContext, resource_type: int, name: str) -> tuple[ErrorCode, str] | None:
    """Why a config resource cannot be described or altered, or None."""
    if resource_type == TOPIC:
        if name not in ctx.broker.topics:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
        return None
    if resource_type == BROKER:
        if name not in ("", str(ctx.broker.node_id)):
            return (
                ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {ctx.broker.node_id} but received {name}",
            )
        return None
    return ErrorCode.INVALID_REQUEST, f"Config resource type {resource_type} is not supported"


async def handle_describe_configs(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    synonyms = bool(request.get("include_synonyms"))
    results = []
    for resource in request["resources"]:
        kind, name, keys = (
            resource["resource_type"],
            resource["resource_name"],
            resource["configuration_keys"],
        )
        result: dict[str, Any] = {
            "resource_type": kind,
            "resource_name": name,
            "error_message": None,
            "configs": [],
        }
        problem = config_refusal(ctx, kind, name) or resource_error(ctx, kind, name)
        if problem is not None:
            results.append(result | {"error_code": problem[0], "error_message": problem[1]})
            continue
        configs = (
            describe_topic(ctx, name, keys, synonyms)
            if kind == TOPIC
            else describe_broker(ctx, keys, synonyms)
        )
        results.append(result | {"error_code": ErrorCode.NONE, "configs": configs})
    return {"throttle_time_ms": 0, "results": results}


def apply_incremental(current: dict[str, str], changes: list[dict[str, Any]]) -> dict[str, str]:
    """Kafka's SET / DELETE / APPEND / SUBTRACT on a topic's overrides (lists are comma-separated)."""
    updated = dict(current)
    for change in changes:
        key, op, value = change["name"], change["config_operation"], change["value"]
        definition = TOPIC_CONFIGS.get(key)
        if op == SET:
            updated[key] = value or ""
        elif op == DELETE:
            updated.pop(key, None)
        elif op in (APPEND, SUBTRACT):
            if definition is None or definition.type != ConfigType.LIST:
                raise TopicError(
                    ErrorCode.INVALID_CONFIG, f"Config value append/subtract is not allowed for {key}"
                )
            items = [v for v in updated.get(key, "").split(",") if v]
            given = [v.strip() for v in (value or "").split(",") if v.strip()]
            items = (
                items + [v for v in given if v not in items]
                if op == APPEND
                else [v for v in items if v not in given]
            )
            updated[key] = ",".join(items)
        else:
            raise TopicError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}")
    return updated


def keep_internal_topic_compacted(name: str, updated: dict[str, str]) -> None:
    """Refuse a config change that would let retention delete an internal topic's segments.

    ``__consumer_offsets`` holds committed offsets and group metadata, and compaction keeps the
    latest record of each key forever; with ``delete`` in its cleanup policy, retention would
    drop whole segments and the groups would lose their offsets at the next replay. Kafka 4.3
    accepts such a change (and a legacy AlterConfigs that omits ``cleanup.policy`` silently
    resets it to the broker default, ``delete``); Odradek refuses it with POLICY_VIOLATION.
    ``retention.ms``/``retention.bytes`` stay settable: as in Kafka they have no effect while
    the policy is ``compact`` alone.
    """
    policy = [v.strip() for v in updated.get("cleanup.policy", "").split(",") if v.strip()]
    if set(policy) != {"compact"}:
        raise TopicError(
            ErrorCode.POLICY_VIOLATION,
            f"cleanup.policy of internal topic {name} must stay 'compact' (asked: "
            f"{','.join(policy) or 'the broker default'}): deleting its segments would lose "
            "committed offsets and group metadata.",
        )


async def alter(ctx: RequestContext, request: dict[str, Any], incremental: bool) -> dict[str, Any]:
    responses = []
    for resource in request["resources"]:
        kind, name = resource["resource_type"], resource["resource_name"]
        result = {
            "resource_type": kind,
            "resource_name": name,
            "error_code": ErrorCode.NONE,
            "error_message": None,
        }
        problem = config_refusal(ctx, kind, name) or resource_error(ctx, kind, name)
        if problem is None and kind == BROKER:
            problem = (
                ErrorCode.INVALID_REQUEST,
                "Odradek does not change broker configs at runtime; set them in server.properties or with "
                "--override and restart",
            )
        if problem is not None:
            responses.append(result | {"error_code": problem[0], "error_message": problem[1]})
            continue
        info = ctx.broker.topics.get(name)
        if info is None:  # resource_error just found it, and nothing awaited since
            raise RuntimeError(f"topic {name} vanished between its check and its use")
        try:
            if incremental:
                updated = apply_incremental(info.configs, resource["configs"])
            else:
                updated = {c["name"]: c["value"] for c in resource["configs"] if c["value"] is not None}
            validate_configs(updated)
            if info.internal:
                keep_internal_topic_compacted(name, updated)
        except TopicError as exc:
            responses.append(result | {"error_code": exc.code, "error_message": exc.message})
            continue
        if not request["validate_only"]:
            ctx.broker.topics.set_configs(name, updated)
            ctx.broker.partitions.reconfigure(info)
        responses.append(result)
    return {"throttle_time_ms": 0, "responses": responses}


async def handle_alter_configs(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return await alter(ctx, request, incremental=False)


async def handle_incremental_alter_configs(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return await alter(ctx, request, incremental=True)


HANDLERS = {
    ApiKey.DESCRIBE_CONFIGS: Served(handle_describe_configs),
    ApiKey.ALTER_CONFIGS: Served(handle_alter_configs),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: Served(handle_incremental_alter_configs),
}
