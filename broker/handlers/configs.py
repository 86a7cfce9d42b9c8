"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics, the broker and groups.

Values, sources and synonyms are reported as Kafka reports them: a topic key shows its
override (DYNAMIC_TOPIC_CONFIG), else the broker's setting of its synonym (this node's dynamic
value, the cluster-wide dynamic default, the static one), else the default (DEFAULT_CONFIG),
and with ``include_synonyms`` the whole chain.  BROKER resources are this node (``"1"``) or
the cluster-wide default (``""``); every key Kafka lets change at runtime
(``broker/config/kafka_dynamic_keys.py``) changes here too, with Kafka's checks and messages, and is
kept in a document (:mod:`broker.state.dynamic_config_store`: a single node's file, or shared by
every broker of a cluster; one that cannot take a change now answers REQUEST_TIMED_OUT, as Kafka
does when its controller does not commit a change in time); those Odradek applies
(``LIVE_BROKER_KEYS``) take effect at once (:mod:`broker.config.config.broker_config_view` shows them).  GROUP resources (type 32) carry KIP-848 group
configs (:mod:`broker.config.config.group_configs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from broker.config.broker_config_view import describe_default, describe_node
from broker.config.config import BrokerConfig, default_value
from broker.config.config_defs import (
    BROKER_CONFIGS,
    KAFKA_TOPIC_DEFAULTS,
    TOPIC_CONFIGS,
    ConfigSource,
    ConfigType,
)
from broker.config.dynamic_config import DEFAULT_ENTITY, DynamicConfigError
from broker.config.group_configs import GROUP_CONFIGS, SHARE_CHOICES
from broker.config.kafka_dynamic_keys import DYNAMIC_KEYS
from broker.requests.acl_checks import config_refusal
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.services import broker_loggers
from broker.services.telemetry.client_metrics_resources import (
    CLIENT_METRICS,
    alter_client_metrics,
    describe_client_metrics,
    replace_client_metrics,
)
from broker.services.topic_admin import TopicError, set_topic_configs_async, validate_configs
from broker.state.documents import DocumentUnavailable
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        AlterConfigsRequest,
        AlterConfigsResponse,
        AlterConfigsResponseResponses,
        CreateTopicsRequestConfigs,
        DescribeConfigsRequest,
        DescribeConfigsResponse,
        DescribeConfigsResponseConfigs,
        DescribeConfigsResponseResults,
        DescribeConfigsResponseSynonyms,
        IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsRequestConfigs,
        IncrementalAlterConfigsResponse,
    )

TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
_KAFKA_DEFAULTS = BrokerConfig({})  # what each key would be with an empty server.properties
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
BROKER_KEY_TYPES: dict[str, Any] = {**DYNAMIC_KEYS, **BROKER_CONFIGS}
"""Every broker key with a known type, for APPEND/SUBTRACT (Kafka's broker knows them all)."""


@dataclass(frozen=True)
class Replacement:
    """A resource's configs in the legacy AlterConfigs: the whole new set."""

    configs: list[CreateTopicsRequestConfigs]


Changes: TypeAlias = "list[IncrementalAlterConfigsRequestConfigs] | Replacement"
"""What an alter request does to one resource: IncrementalAlterConfigs' operations, or a
replacement."""


def config_entry(
    name: str,
    value: str | None,
    source: int,  # a ConfigSource, or a synonym's (the wire's int)
    type_: ConfigType,
    doc: str,
    synonyms: list[DescribeConfigsResponseSynonyms],
    read_only: bool,
) -> DescribeConfigsResponseConfigs:
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


def synonym(name: str, value: str | None, source: ConfigSource) -> DescribeConfigsResponseSynonyms:
    return {"name": name, "value": value, "source": source}


def chained_entry(
    key: str, chain: list[DescribeConfigsResponseSynonyms], definition: Any, synonyms: bool
) -> DescribeConfigsResponseConfigs:
    """A writable key described by its synonym chain: the value and source are the chain's first."""
    top = chain[0]
    return config_entry(
        key, top["value"], top["source"], definition.type, definition.doc, chain if synonyms else [], False
    )


def describe_topic(
    ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool
) -> list[DescribeConfigsResponseConfigs]:
    broker_config = ctx.broker.config
    info = ctx.broker.topics.get(name)
    overrides = info.configs if info else {}
    entries = []
    for key, definition in sorted(TOPIC_CONFIGS.items()):
        if keys is not None and key not in keys:
            continue
        chain: list[DescribeConfigsResponseSynonyms] = []
        if key in overrides:
            chain.append(synonym(key, overrides[key], ConfigSource.DYNAMIC_TOPIC_CONFIG))
        broker_key = definition.broker_synonym
        chain += [
            synonym(broker_key, value, source)
            for source, value in broker_config.layers(broker_key)
            if source != ConfigSource.DEFAULT_CONFIG
        ]
        default = _KAFKA_DEFAULTS.get(broker_key) or definition.default
        chain.append(synonym(broker_key, default, ConfigSource.DEFAULT_CONFIG))
        entries.append(chained_entry(key, chain, definition, synonyms))
    for key, choice in sorted(SHARE_CHOICES.items()):
        if keys is not None and key not in keys:
            continue
        chain = [synonym(key, choice.default, ConfigSource.DEFAULT_CONFIG)]
        if key in overrides:
            chain.insert(0, synonym(key, overrides[key], ConfigSource.DYNAMIC_GROUP_CONFIG))
        entries.append(chained_entry(key, chain, choice, synonyms))
    return entries


def describe_broker(
    ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool
) -> list[DescribeConfigsResponseConfigs]:
    """This node's every key, or for the cluster-wide default resource only the keys it sets."""
    if name == DEFAULT_ENTITY:
        return describe_default(ctx.broker.config, keys, synonyms)
    return describe_node(ctx.broker.config, keys, synonyms)


def describe_broker_logger(
    ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool
) -> list[DescribeConfigsResponseConfigs]:
    """Every logger's effective level (Kafka: every log4j logger's)."""
    source = ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG
    return [
        config_entry(logger, level, source, ConfigType.STRING, "", [], False)
        for logger, level in broker_loggers.describe_levels(keys)
    ]


def describe_group(
    ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool
) -> list[DescribeConfigsResponseConfigs]:
    """Every group key: the group's own value (DYNAMIC_GROUP_CONFIG) over the broker's default."""
    config = ctx.broker.config
    overrides = ctx.broker.dynamic_configs.groups.get(name, {})
    defaults: list[tuple[str, Any, str, str | None]] = [
        (key, definition, definition.broker_default, config.get(definition.broker_default))
        for key, definition in GROUP_CONFIGS.items()
    ]
    defaults += [(key, choice, key, choice.default) for key, choice in SHARE_CHOICES.items()]
    entries = []
    for key, definition, default_name, default in sorted(defaults, key=lambda entry: entry[0]):
        if keys is not None and key not in keys:
            continue
        chain = [synonym(default_name, default, ConfigSource.DEFAULT_CONFIG)]
        if key in overrides:
            chain.insert(0, synonym(key, overrides[key], ConfigSource.DYNAMIC_GROUP_CONFIG))
        entries.append(chained_entry(key, chain, definition, synonyms))
    return entries


def resource_error(ctx: RequestContext, resource_type: int, name: str) -> tuple[ErrorCode, str] | None:
    """Why a config resource cannot be described or altered, or None."""
    if resource_type == TOPIC:
        if name not in ctx.broker.topics:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
        return None
    if resource_type in (BROKER, BROKER_LOGGER):
        if name != str(ctx.broker.node_id) and (name or resource_type == BROKER_LOGGER):
            return (
                ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {ctx.broker.node_id} but received {name}",
            )
        return None
    if resource_type == GROUP:
        return None
    return ErrorCode.INVALID_REQUEST, f"Config resource type {resource_type} is not supported"


async def handle_describe_configs(
    ctx: RequestContext, request: DescribeConfigsRequest
) -> DescribeConfigsResponse:
    synonyms = bool(request.get("include_synonyms"))
    results: list[DescribeConfigsResponseResults] = []
    for resource in request["resources"]:
        kind, name, keys = (
            resource["resource_type"],
            resource["resource_name"],
            resource["configuration_keys"],
        )
        if kind == CLIENT_METRICS:
            store, documentation = ctx.broker.client_telemetry.store, bool(request["include_documentation"])
            results.append(describe_client_metrics(store, name, keys, synonyms, documentation))
            continue
        result: DescribeConfigsResponseResults = {
            "resource_type": kind,
            "resource_name": name,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "configs": [],
        }
        problem = config_refusal(ctx, kind, name) or resource_error(ctx, kind, name)
        if problem is not None:
            result["error_code"], result["error_message"] = problem
            results.append(result)
            continue
        describe = {
            TOPIC: describe_topic,
            BROKER: describe_broker,
            BROKER_LOGGER: describe_broker_logger,
            GROUP: describe_group,
        }[kind]
        result["configs"] = describe(ctx, name, keys, synonyms)
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}


def list_refusal(kind: int, key: str, op: int, types: Mapping[str, Any]) -> TopicError | None:
    """Why APPEND/SUBTRACT cannot change ``key``, in the words Kafka uses for the resource kind:
    the broker's own check for BROKER resources, its controller's for the others."""
    definition = types.get(key)
    if definition is not None and definition.type == ConfigType.LIST:
        return None
    verb = "APPEND" if op == APPEND else "SUBTRACT"
    if kind != BROKER:
        message = f"Can't {verb} to key {key} because its type is not LIST."
    elif definition is None:
        message = f"Unknown config name: {key}"
    else:
        message = f"Config value {verb.lower()} is not allowed for config key: {key}"
    return TopicError(ErrorCode.INVALID_CONFIG, message)


def apply_incremental(
    kind: int,
    current: dict[str, str],
    changes: list[IncrementalAlterConfigsRequestConfigs],
    types: Mapping[str, Any],
) -> dict[str, str]:
    """Kafka's SET / DELETE / APPEND / SUBTRACT on a resource's configs. Lists are comma-separated,
    and one the resource does not set starts from the key's default (appending ``compact`` to an
    unset ``cleanup.policy`` gives ``delete,compact``, as on Kafka); ``types`` holds the resource
    kind's definitions (each with a ``type``)."""
    updated = dict(current)
    for change in changes:
        key, op, value = change["name"], change["config_operation"], change["value"]
        if op == SET:
            updated[key] = value or ""
        elif op == DELETE:
            updated.pop(key, None)
        elif op in (APPEND, SUBTRACT):
            refusal = list_refusal(kind, key, op, types)
            if refusal is not None:
                raise refusal
            start = updated.get(key, _list_default(kind, key))
            items = [v for v in (start or "").split(",") if v]
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


def _list_default(kind: int, key: str) -> str | None:
    if kind == TOPIC:
        return KAFKA_TOPIC_DEFAULTS.get(key)
    return default_value(key) if kind == BROKER else None


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


def updated_configs(
    kind: int, current: dict[str, str], changes: Changes, types: Mapping[str, Any]
) -> dict[str, str]:
    """A resource's configs after the request: changed in place (incremental) or replaced."""
    if isinstance(changes, Replacement):
        return {c["name"]: value for c in changes.configs if (value := c["value"]) is not None}
    return apply_incremental(kind, current, changes, types)


async def alter_topic(ctx: RequestContext, name: str, changes: Changes, commit: bool) -> None:
    info = ctx.broker.topics.get(name)
    if info is None:  # resource_error just found it, and nothing awaited since
        raise RuntimeError(f"topic {name} vanished between its check and its use")
    updated = updated_configs(TOPIC, info.configs, changes, TOPIC_CONFIGS)
    validate_configs(updated)
    if info.internal:
        keep_internal_topic_compacted(name, updated)
    if commit:
        await set_topic_configs_async(ctx.broker, info, updated)


async def alter_broker(ctx: RequestContext, name: str, changes: Changes, commit: bool) -> None:
    """Change the cluster-wide default (``name == ""``) or this node's dynamic layer; it applies
    once stored (in a cluster, on every broker)."""
    await ctx.broker.dynamic_configs.alter_broker(
        name,
        lambda current: updated_configs(BROKER, current, changes, BROKER_KEY_TYPES),
        validate_only=not commit,
    )


async def alter_group(ctx: RequestContext, name: str, changes: Changes, commit: bool) -> None:
    """Change a group's KIP-848 configs; its next heartbeat uses them."""
    await ctx.broker.dynamic_configs.alter_group(
        name,
        lambda current: updated_configs(GROUP, current, changes, GROUP_CONFIGS),
        validate_only=not commit,
    )


async def alter_broker_logger(ctx: RequestContext, name: str, changes: Changes, commit: bool) -> None:
    """Set or unset log levels at once (not kept across a restart, as in Kafka)."""
    if isinstance(changes, Replacement):
        raise DynamicConfigError(
            "AlterConfigs does not support the BROKER_LOGGER resource type; use IncrementalAlterConfigs"
        )
    broker_loggers.check_changes(changes)
    if commit:
        broker_loggers.apply_changes(changes)


_ALTER = {TOPIC: alter_topic, BROKER: alter_broker, BROKER_LOGGER: alter_broker_logger, GROUP: alter_group}


async def alter(
    ctx: RequestContext, kind: int, name: str, changes: Changes, validate_only: bool
) -> AlterConfigsResponseResponses:
    """One resource of an AlterConfigs or IncrementalAlterConfigs request, answered."""
    if kind == CLIENT_METRICS:
        store = ctx.broker.client_telemetry.store
        if isinstance(changes, Replacement):
            return await replace_client_metrics(store, name, changes.configs, validate_only)
        return await alter_client_metrics(store, name, changes, validate_only)
    result: AlterConfigsResponseResponses = {
        "resource_type": kind,
        "resource_name": name,
        "error_code": ErrorCode.NONE,
        "error_message": None,
    }
    problem: tuple[ErrorCode, str | None] | None = config_refusal(ctx, kind, name) or resource_error(
        ctx, kind, name
    )
    if problem is None:
        try:
            await _ALTER[kind](ctx, name, changes, not validate_only)
        except TopicError as exc:
            problem = exc.code, exc.message
        except DynamicConfigError as exc:
            problem = exc.code, str(exc)
        except DocumentUnavailable as exc:  # as Kafka answers a change its controller did not commit in time
            problem = ErrorCode.REQUEST_TIMED_OUT, str(exc)
    if problem is not None:
        result["error_code"], result["error_message"] = problem
    return result


async def handle_alter_configs(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    responses = [
        await alter(
            ctx, r["resource_type"], r["resource_name"], Replacement(r["configs"]), request["validate_only"]
        )
        for r in request["resources"]
    ]
    return {"throttle_time_ms": 0, "responses": responses}


async def handle_incremental_alter_configs(
    ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    responses = [
        await alter(ctx, r["resource_type"], r["resource_name"], r["configs"], request["validate_only"])
        for r in request["resources"]
    ]
    return {"throttle_time_ms": 0, "responses": responses}


HANDLERS = {
    ApiKey.DESCRIBE_CONFIGS: Served(handle_describe_configs),
    ApiKey.ALTER_CONFIGS: Served(handle_alter_configs),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: Served(handle_incremental_alter_configs),
}
