"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs of CLIENT_METRICS resources (type 16).

``broker.handlers.configs`` hands every resource of this type here.  What is answered follows
Apache Kafka 4.3, checked against a real broker: Describe lists all three keys (set ones as
CLIENT_METRICS_CONFIG with themselves as their synonym, the rest as DEFAULT_CONFIG with none),
also for a name no subscription has; IncrementalAlterConfigs applies SET and DELETE, refuses
APPEND and SUBTRACT on every key (Kafka checks list types against broker and topic keys
only), and a subscription whose keys are all deleted is removed; the legacy AlterConfigs
replaces the whole set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.config.client_metrics_config import KEYS, ClientMetricsConfigError
from broker.config.config_defs import ConfigSource
from broker.state.client_metrics_store import SubscriptionStore, Update
from broker.state.documents import DocumentUnavailable
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        AlterConfigsResponseResponses,
        CreateTopicsRequestConfigs,
        DescribeConfigsResponseConfigs,
        DescribeConfigsResponseResults,
        IncrementalAlterConfigsRequestConfigs,
    )

CLIENT_METRICS = 16
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OPERATION_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def describe_client_metrics(
    store: SubscriptionStore, name: str, keys: list[str] | None, synonyms: bool, documentation: bool
) -> DescribeConfigsResponseResults:
    """One DescribeConfigs result for the subscription ``name`` (no keys named: all of them)."""
    result: DescribeConfigsResponseResults = {
        "resource_type": CLIENT_METRICS,
        "resource_name": name,
        "error_code": ErrorCode.NONE,
        "error_message": "",
        "configs": [],
    }
    if not name:
        result["error_code"] = ErrorCode.INVALID_REQUEST
        result["error_message"] = "Client metrics subscription name must not be empty"
        return result
    values = store.values(name)
    entries: list[DescribeConfigsResponseConfigs] = []
    for key, definition in sorted(KEYS.items()):
        if keys and key not in keys:
            continue
        is_set = key in values
        value = values[key] if is_set else definition.default
        source = ConfigSource.CLIENT_METRICS_CONFIG if is_set else ConfigSource.DEFAULT_CONFIG
        entries.append(
            {
                "name": key,
                "value": value,
                "read_only": False,
                "config_source": source,
                "is_sensitive": False,
                "synonyms": [{"name": key, "value": value, "source": source}] if synonyms and is_set else [],
                "config_type": definition.type,
                "documentation": definition.doc if documentation else None,
            }
        )
    result["configs"] = entries
    return result


def _null_value(key: str) -> ClientMetricsConfigError:
    return ClientMetricsConfigError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {key}")


def _incremental(
    current: dict[str, str], changes: list[IncrementalAlterConfigsRequestConfigs]
) -> dict[str, str]:
    if len({change["name"] for change in changes}) != len(changes):
        raise ClientMetricsConfigError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    updated = dict(current)
    for change in changes:
        key, operation, value = change["name"], change["config_operation"], change["value"]
        if operation == SET:
            if value is None:
                raise _null_value(key)
            updated[key] = value
        elif operation == DELETE:
            updated.pop(key, None)
        elif operation in _OPERATION_NAMES:
            raise ClientMetricsConfigError(
                ErrorCode.INVALID_CONFIG,
                f"Can't {_OPERATION_NAMES[operation]} to key {key} because its type is not LIST.",
            )
        else:
            raise ClientMetricsConfigError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {operation}")
    return updated


def _replacement(configs: list[CreateTopicsRequestConfigs]) -> dict[str, str]:
    """The legacy AlterConfigs: the keys given are the whole subscription."""
    replaced: dict[str, str] = {}
    for config in configs:
        value = config["value"]
        if value is None:
            raise _null_value(config["name"])
        replaced[config["name"]] = value
    return replaced


async def alter_client_metrics(
    store: SubscriptionStore,
    name: str,
    changes: list[IncrementalAlterConfigsRequestConfigs],
    validate_only: bool,
) -> AlterConfigsResponseResponses:
    """One IncrementalAlterConfigs response entry for a subscription; stores the change."""
    return await _alter(store, name, lambda current: _incremental(current, changes), validate_only)


async def replace_client_metrics(
    store: SubscriptionStore, name: str, configs: list[CreateTopicsRequestConfigs], validate_only: bool
) -> AlterConfigsResponseResponses:
    """One (legacy) AlterConfigs response entry for a subscription; stores the new set."""
    return await _alter(store, name, lambda _: _replacement(configs), validate_only)


async def _alter(
    store: SubscriptionStore, name: str, update: Update, validate_only: bool
) -> AlterConfigsResponseResponses:
    """The change answered; a document that cannot take it now (etcd unreachable, a cluster's
    size bound) is REQUEST_TIMED_OUT with what to do, as a change Kafka's controller does not
    commit in time is."""
    result: AlterConfigsResponseResponses = {
        "resource_type": CLIENT_METRICS,
        "resource_name": name,
        "error_code": ErrorCode.NONE,
        "error_message": None,
    }
    try:
        await store.alter(name, update, validate_only=validate_only)
    except ClientMetricsConfigError as exc:
        result["error_code"] = exc.code
        result["error_message"] = exc.message
    except DocumentUnavailable as exc:
        result["error_code"] = ErrorCode.REQUEST_TIMED_OUT
        result["error_message"] = str(exc)
    return result
