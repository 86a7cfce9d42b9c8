"""Kafka's checks of a dynamic broker config change, in Kafka's words and order.

Kafka 4.3's ``DynamicBrokerConfig.validateConfigs`` refuses, in this order: keys Kafka keeps
static; TLS key and trust store keys without a listener prefix; values that do not parse as their
key's type or fail its validator (``listener.name.<listener>.<key>`` is checked as ``<key>``);
and, at the cluster-wide default, keys only a broker may set. Then the parts of Kafka that
reconfigure themselves check the change against the running config: a thread pool, and the log
cleaner's threads, may at most halve or double at once. The key sets are Kafka's own, read from
its jars (:mod:`broker.config.config.kafka_dynamic_keys`). A key Kafka does not know at all is a custom config,
which Kafka keeps (plugins read them) and so does Odradek; Odradek's own keys are static.
Kafka checks a few more things this does not: a new ``listeners`` value against the running
listeners, ``cordoned.log.dirs`` against ``log.dirs``, and classes and metric reporters by
loading them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping

from broker.config.config_defs import BROKER_CONFIGS
from broker.config.kafka_dynamic_keys import (
    CLUSTER_LEVEL_LISTENER_KEYS,
    DYNAMIC_KEYS,
    LISTENER_ONLY_KEYS,
    LOG_CLEANER_KEYS,
    STATIC_KEYS,
    THREAD_POOL_KEYS,
)
from broker.config.kafka_values import InvalidValue, check, java_hash_set_text, parse

LISTENER_KEY = re.compile(r"listener\.name\.[^.]*\.(.*)")
"""Kafka's ``LISTENER_CONFIG_REGEX``: a per-listener key and the key it sets for that listener."""

CLEANER_THREADS = "log.cleaner.threads"
THREAD_COUNT_KEYS = THREAD_POOL_KEYS | {"num.network.threads"}
"""Kafka's thread pools, and its network threads, whose acceptor checks a new count the same way."""


def base_key(name: str) -> str | None:
    """``ssl.keystore.type`` for ``listener.name.external.ssl.keystore.type``, else None."""
    match = LISTENER_KEY.fullmatch(name)
    return match.group(1) if match else None


def is_static(name: str) -> bool:
    """A key no AlterConfigs may change: Kafka keeps it static, or it is Odradek's own."""
    return name in STATIC_KEYS or (name in BROKER_CONFIGS and name not in DYNAMIC_KEYS)


def is_per_broker(name: str) -> bool:
    """A key only a broker's own resource may set, never the cluster-wide default."""
    kafka_key = DYNAMIC_KEYS.get(name)
    if kafka_key is not None:
        return kafka_key.per_broker
    base = base_key(name)
    return base is not None and base not in CLUSTER_LEVEL_LISTENER_KEYS


def _refuse(names: Collection[str], reason: str, initial_capacity: int = 16) -> None:
    if names:
        raise InvalidValue(f"{reason}: {java_hash_set_text(names, initial_capacity)}")


def check_change(configs: Mapping[str, str], per_broker: bool) -> None:
    """Kafka's ``validateConfigs`` on a resource's whole new set of dynamic configs."""
    names = list(configs)
    # Kafka copies the request's names into a HashSet sized for them, which orders the message.
    sized = max(int(len(names) / 0.75) + 1, 16)
    _refuse([n for n in names if is_static(n)], "Cannot update these configs dynamically", sized)
    _refuse(
        [n for n in names if n in LISTENER_ONLY_KEYS],
        "These security configs can be dynamically updated only per-listener using the listener prefix",
    )
    for name, value in configs.items():
        key = base_key(name) or name
        if key in DYNAMIC_KEYS:
            check(key, DYNAMIC_KEYS[key], value)
    if not per_broker:
        _refuse(
            [n for n in names if is_per_broker(n)],
            "Cannot update these configs at default cluster level, broker id must be specified",
        )


def _reconfiguration_failure(reason: str) -> InvalidValue:
    """How Kafka words a refusal from a part that reconfigures itself (its ConfigException,
    wrapped in another whose "name" is "Invalid dynamic configuration")."""
    return InvalidValue(
        f"Invalid value org.apache.kafka.common.config.ConfigException: {reason} "
        "for configuration Invalid dynamic configuration"
    )


def _count(get: Callable[[str], str | None], key: str) -> int:
    value = parse(key, DYNAMIC_KEYS[key].type, get(key) or "0")
    return value if isinstance(value, int) else 0


def check_thread_counts(current: Callable[[str], str | None], new: Callable[[str], str | None]) -> None:
    """Kafka's thread pools and log cleaner refuse to shrink below half or grow beyond double
    their current size at once (``current``/``new`` read a key's configured value)."""
    for key in sorted(THREAD_COUNT_KEYS):
        old, wanted = _count(current, key), _count(new, key)
        if wanted == old:
            continue
        failed = f"Dynamic thread count update validation failed for {key}={wanted}"
        if wanted <= 0:
            raise _reconfiguration_failure(f"{failed}, value should be at least 1")
        if wanted < old // 2:
            raise _reconfiguration_failure(f"{failed}, value should be at least half the current value {old}")
        if wanted > old * 2:
            raise _reconfiguration_failure(
                f"{failed}, value should not be greater than double the current value {old}"
            )
    if all(current(key) == new(key) for key in LOG_CLEANER_KEYS):
        return
    old, wanted = _count(current, CLEANER_THREADS), _count(new, CLEANER_THREADS)
    if wanted < 1:
        raise _reconfiguration_failure("Log cleaner threads should be at least 1")
    if wanted < old // 2:
        raise _reconfiguration_failure(
            f"Log cleaner threads cannot be reduced to less than half the current value {old}"
        )
    if wanted > old * 2:
        raise _reconfiguration_failure(
            f"Log cleaner threads cannot be increased to more than double the current value {old}"
        )
