"""Dynamic configs: the brokers' cluster-wide default, this node's layer, and group configs.

Kafka keeps ``kafka-configs --alter --entity-type brokers|groups`` changes in its metadata
log; a single Odradek node keeps them in ``dynamic-configs.json`` in its data directory
(``{"default": {...}, "node": {...}, "groups": {group: {...}}}``), replaced atomically
(temporary file, fsync, rename, directory fsync) on every change and read back at start-up,
so changes survive a restart. A broker change is checked by Kafka's rules
(:mod:`broker.config.config.dynamic_rules`); each layer holds at most ``MAX_LAYER_KEYS`` keys and
``MAX_LAYER_BYTES`` of text (Odradek's bounds: Kafka keeps any number of custom keys).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from broker.config.config import BrokerConfig, ConfigError
from broker.config.config_defs import ConfigType
from broker.config.dynamic_rules import check_change, check_thread_counts, is_static
from broker.config.kafka_values import InvalidValue, parse
from log.checkpoint import write_atomically
from wire.error_codes import ErrorCode

log = logging.getLogger(__name__)

FILE_NAME = "dynamic-configs.json"
DEFAULT_ENTITY = ""  # the resource name of the cluster-wide default (``--entity-default``)
MAX_LAYER_KEYS = 1000
MAX_LAYER_BYTES = 1 << 20


class DynamicConfigError(Exception):
    """A change Kafka refuses; ``code`` and the message are Kafka's."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.INVALID_REQUEST) -> None:
        super().__init__(message)
        self.code = code


def check_type(key: str, type_: ConfigType, value: str, code: ErrorCode = ErrorCode.INVALID_REQUEST) -> None:
    """Refuse a value that does not parse as ``type_``, in the words of Kafka's ConfigDef."""
    try:
        parse(key, type_, value)
    except InvalidValue as exc:
        raise DynamicConfigError(str(exc), code) from None


def check_broker_layer(updated: dict[str, str], per_broker: bool) -> None:
    """Kafka's rules for a broker resource's new set of configs, then Odradek's size bounds."""
    try:
        check_change(updated, per_broker)
    except InvalidValue as exc:
        raise DynamicConfigError(str(exc)) from None
    size = sum(len(key) + len(value) for key, value in updated.items())
    if len(updated) > MAX_LAYER_KEYS or size > MAX_LAYER_BYTES:
        raise DynamicConfigError(
            f"At most {MAX_LAYER_KEYS} dynamic broker configs of {MAX_LAYER_BYTES} bytes in all may be set "
            f"for one resource (asked: {len(updated)} of {size} bytes); delete some first",
            ErrorCode.POLICY_VIOLATION,
        )


@dataclass
class DynamicConfigs:
    """The two dynamic broker layers and the group configs of one node, and their file."""

    path: Path
    default: dict[str, str] = field(default_factory=dict)
    node: dict[str, str] = field(default_factory=dict)
    groups: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def load(cls, data_dir: Path) -> DynamicConfigs:
        """Read what is saved in ``data_dir`` (nothing yet: all empty)."""
        path = data_dir / FILE_NAME
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(path)
        return cls(path, saved["default"], saved["node"], saved["groups"])

    def save(self) -> None:
        data = {"default": self.default, "node": self.node, "groups": self.groups}
        write_atomically(str(self.path), json.dumps(data, indent=1, sort_keys=True).encode())

    def layer(self, entity: str) -> dict[str, str]:
        return self.default if entity == DEFAULT_ENTITY else self.node

    def layered(self, config: BrokerConfig, entity: str, updated: dict[str, str]) -> BrokerConfig:
        """``config`` with ``entity``'s layer replaced by ``updated``, checked by Kafka's rules
        and as a start-up config would be (types, the log settings derived from it)."""
        check_broker_layer(updated, per_broker=entity != DEFAULT_ENTITY)
        default, node = (updated, self.node) if entity == DEFAULT_ENTITY else (self.default, updated)
        result = config.with_dynamic(default, node)
        try:
            result.validate()
        except ConfigError as exc:
            raise DynamicConfigError(str(exc)) from None
        return result

    def candidate(self, config: BrokerConfig, entity: str, updated: dict[str, str]) -> BrokerConfig:
        """:meth:`layered`, and a change the running broker would refuse as Kafka's does (thread
        counts that more than halve or double at once)."""
        result = self.layered(config, entity, updated)
        try:
            check_thread_counts(config.configured, result.configured)
        except InvalidValue as exc:
            raise DynamicConfigError(str(exc)) from None
        return result

    def commit(self, config: BrokerConfig, entity: str, updated: dict[str, str]) -> None:
        """Persist ``entity``'s new layer durably, then make ``config`` use it."""
        if entity == DEFAULT_ENTITY:
            self.default = dict(updated)
        else:
            self.node = dict(updated)
        self.save()
        config.set_dynamic(self.default, self.node)

    def commit_group(self, group: str, updated: dict[str, str]) -> None:
        """Persist a group's configs durably (an empty set forgets the group)."""
        if updated:
            self.groups[group] = dict(updated)
        else:
            self.groups.pop(group, None)
        self.save()

    def apply_at_start(self, config: BrokerConfig) -> None:
        """Put the saved layers under ``config``. Keys that have become static are dropped with
        a WARNING (before Odradek took Kafka's list, ``log.retention.hours`` could be saved); a
        saved set the static config now makes invalid is left out with an ERROR (Kafka skips
        invalid dynamic configs too)."""
        for layer in (self.default, self.node):
            static = sorted(key for key in layer if is_static(key))
            if static:
                log.warning("ignoring saved dynamic broker configs Kafka keeps static: %s", ", ".join(static))
                for key in static:
                    del layer[key]
        try:
            self.layered(config, DEFAULT_ENTITY, self.default)
            self.layered(config, "node", self.node)
        except DynamicConfigError as exc:
            log.error("ignoring the dynamic broker configs in %s: %s", self.path, exc)
            return
        config.set_dynamic(self.default, self.node)
