"""A broker's configs as DescribeConfigs shows them, the way Kafka 4.3 does.

This node's resource lists every key Odradek knows, every key Kafka lets change at runtime
(with Kafka's default when unset, so ``sasl.kerberos.min.time.before.relogin`` shows 60000), and
whatever the dynamic layers hold besides: per-listener keys (read-only in Kafka's listing, with
the listener-less key as their synonym) and custom keys (hidden, read-only, of unknown type, as
Kafka shows keys it has no definition for). The cluster-wide default resource lists only what it
sets. Secrets (PASSWORD keys, JAAS lines) are never shown, only flagged sensitive. A key Kafka
lets change but Odradek does not apply says so in its documentation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.config.config import BrokerConfig
from broker.config.config_defs import BROKER_CONFIGS, LIVE_BROKER_KEYS, ConfigSource, ConfigType
from broker.config.dynamic_rules import base_key
from broker.config.kafka_dynamic_keys import DYNAMIC_KEYS, LISTENER_MECHANISM_KEYS

if TYPE_CHECKING:
    from wire.messages import DescribeConfigsResponseConfigs, DescribeConfigsResponseSynonyms

UNKNOWN_TYPE = 0  # Kafka's ConfigType.UNKNOWN, for a custom key
NO_EFFECT = (
    " Kafka lets this change at runtime; a dynamic value is kept and described but has no effect "
    "in Odradek (broker/config/kafka_dynamic_keys.py)."
)
KAFKA_ONLY = (
    "One of Kafka's dynamic broker keys: accepted, checked and kept, but it has no effect in Odradek."
)
DYNAMIC_SOURCES = (ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)


@dataclass(frozen=True, slots=True)
class KeyFacts:
    """What DescribeConfigs says of a key besides its value."""

    type: int
    doc: str | None
    sensitive: bool
    read_only: bool


def key_facts(key: str) -> KeyFacts:
    """The type, documentation, sensitivity and read-only flag of any broker key."""
    known = BROKER_CONFIGS.get(key)
    kafka_key = DYNAMIC_KEYS.get(key)
    if known is not None:
        doc = known.doc + (NO_EFFECT if kafka_key is not None and key not in LIVE_BROKER_KEYS else "")
        sensitive = known.sensitive or known.type == ConfigType.PASSWORD
        return KeyFacts(known.type, doc, sensitive, read_only=kafka_key is None)
    if kafka_key is not None:
        return KeyFacts(kafka_key.type, KAFKA_ONLY, kafka_key.type == ConfigType.PASSWORD, read_only=False)
    base = base_key(key)
    if base is not None:
        facts = key_facts(base)
        mechanism = any(base.endswith(f".{name}") or base == name for name in LISTENER_MECHANISM_KEYS)
        return KeyFacts(facts.type, facts.doc, facts.sensitive or mechanism, read_only=True)
    return KeyFacts(UNKNOWN_TYPE, None, sensitive=True, read_only=True)


def _synonym(
    name: str, value: str | None, source: ConfigSource, sensitive: bool
) -> DescribeConfigsResponseSynonyms:
    return {"name": name, "value": None if sensitive else value, "source": source}


def _entry(
    key: str, value: str | None, source: ConfigSource, synonyms: list[DescribeConfigsResponseSynonyms]
) -> DescribeConfigsResponseConfigs:
    facts = key_facts(key)
    return {
        "name": key,
        "value": None if facts.sensitive else value,
        "read_only": facts.read_only,
        "config_source": source,
        "is_sensitive": facts.sensitive,
        "synonyms": synonyms,
        "config_type": facts.type,
        "documentation": facts.doc,
    }


def _chain(config: BrokerConfig, key: str) -> list[DescribeConfigsResponseSynonyms]:
    """Kafka's synonyms of a key: its own layers, then for a per-listener key the
    listener-less key's (``brokerConfigSynonyms(name, true)``)."""
    sensitive = key_facts(key).sensitive
    names = [key] + [base for base in (base_key(key),) if base is not None]
    return [
        _synonym(name, value, source, sensitive)
        for name in names
        for source, value in config.layers(name)
        if value is not None
    ]


def node_entry(config: BrokerConfig, key: str, with_synonyms: bool) -> DescribeConfigsResponseConfigs:
    """One key of this node's resource: where it is set, the value it is set to."""
    source = config.source(key)
    value = config.configured(key) if source in DYNAMIC_SOURCES else config.get(key)
    return _entry(key, value, source, _chain(config, key) if with_synonyms else [])


def node_keys(config: BrokerConfig) -> list[str]:
    """Every key this node's resource lists."""
    dynamic = set(config.dynamic_node) | set(config.dynamic_default)
    return sorted(set(BROKER_CONFIGS) | set(DYNAMIC_KEYS) | dynamic)


def describe_node(
    config: BrokerConfig, keys: Iterable[str] | None, with_synonyms: bool
) -> list[DescribeConfigsResponseConfigs]:
    """This node's resource: every key, or those of ``keys`` it has."""
    listed = node_keys(config)
    wanted = listed if keys is None else [key for key in listed if key in set(keys)]
    return [node_entry(config, key, with_synonyms) for key in wanted]


def describe_default(
    config: BrokerConfig, keys: Iterable[str] | None, with_synonyms: bool
) -> list[DescribeConfigsResponseConfigs]:
    """The cluster-wide default resource: only the keys it sets."""
    source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    wanted = None if keys is None else set(keys)
    entries: list[DescribeConfigsResponseConfigs] = []
    for key, value in sorted(config.dynamic_default.items()):
        if wanted is None or key in wanted:
            synonyms = [_synonym(key, value, source, key_facts(key).sensitive)] if with_synonyms else []
            entries.append(_entry(key, value, source, synonyms))
    return entries
