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

from typing import Any

from broker.config.client_metrics_config import KEYS, ClientMetricsConfigError
from broker.config.config_defs import ConfigSource
from broker.state.client_metrics_store import SubscriptionStore
from wire.error_codes import ErrorCode

CLIENT_METRICS = 16
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OPERATION_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def describe_client_metrics(
    store: SubscriptionStore, name: str, keys: list[str] | None, synonyms: bool, documentation: bool
) -> dict[str, Any]:
    """One DescribeConfigs result for the subscription ``name`` (no keys named: all of them)."""
    result: dict[str, Any] = {"resource_type": CLIENT_METRICS, "resource_name": name, "configs": []}
    if not name:
        return result | {
            "error_code": ErrorCode.INVALID_REQUEST,
            "error_message": "Client metrics subscription name must not be empty",
        }
    values = store.values(name)
    entries = []
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
    return result | {"error_code": ErrorCode.NONE, "error_message": "", "configs": entries}


def _null_value(key: str) -> ClientMetricsConfigError:
    return ClientMetricsConfigError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {key}")


def _incremental(current: dict[str, str], changes: list[dict[str, Any]]) -> dict[str, str]:
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


def _replacement(configs: list[dict[str, Any]]) -> dict[str, str]:
    """The legacy AlterConfigs: the keys given are the whole subscription."""
    for config in configs:
        if config["value"] is None:
            raise _null_value(config["name"])
    return {config["name"]: config["value"] for config in configs}


def alter_client_metrics(
    store: SubscriptionStore, resource: dict[str, Any], incremental: bool, validate_only: bool
) -> dict[str, Any]:
    """One (Incremental)AlterConfigs response entry for a subscription; stores the change."""
    name = resource["resource_name"]
    result = {
        "resource_type": CLIENT_METRICS,
        "resource_name": name,
        "error_code": ErrorCode.NONE,
        "error_message": None,
    }
    try:
        if incremental:
            values = _incremental(store.values(name), resource["configs"])
        else:
            values = _replacement(resource["configs"])
        if validate_only:
            store.check(name, values)
        else:
            store.put(name, values)
    except ClientMetricsConfigError as exc:
        return result | {"error_code": exc.code, "error_message": exc.message}
    return result
