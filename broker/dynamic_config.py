"""Dynamic configs: the brokers' cluster-wide default, this node's layer, and group configs.

Kafka keeps ``kafka-configs --alter --entity-type brokers|groups`` changes in its metadata
log; a single Odradek node keeps them in ``dynamic-configs.json`` in its data directory
(``{"default": {...}, "node": {...}, "groups": {group: {...}}}``), replaced atomically
(temporary file, fsync, rename, directory fsync) on every change and read back at start-up,
so changes survive a restart.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from broker.config import BrokerConfig, ConfigError
from broker.config_defs import BROKER_CONFIGS, DYNAMIC_BROKER_KEYS, DYNAMIC_MINIMUMS, ConfigType
from log.checkpoint import write_atomically
from wire.error_codes import ErrorCode

log = logging.getLogger(__name__)

FILE_NAME = "dynamic-configs.json"
DEFAULT_ENTITY = ""  # the resource name of the cluster-wide default (``--entity-default``)


class DynamicConfigError(Exception):
    """A change Kafka refuses; ``code`` and the message are Kafka's."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.INVALID_REQUEST) -> None:
        super().__init__(message)
        self.code = code


_TYPE_NAMES = {
    ConfigType.INT: "INT",
    ConfigType.SHORT: "SHORT",
    ConfigType.LONG: "LONG",
    ConfigType.DOUBLE: "DOUBLE",
}


def check_type(key: str, type_: ConfigType, value: str, code: ErrorCode = ErrorCode.INVALID_REQUEST) -> None:
    """Refuse a value that does not parse as ``type_``, in the words of Kafka's ConfigDef."""
    if type_ in _TYPE_NAMES:
        try:
            float(value) if type_ == ConfigType.DOUBLE else int(value.strip())
        except ValueError:
            raise DynamicConfigError(
                f"Invalid value {value} for configuration {key}: Not a number of type {_TYPE_NAMES[type_]}",
                code,
            ) from None
    elif type_ == ConfigType.BOOLEAN and value.strip().lower() not in ("true", "false"):
        raise DynamicConfigError(
            f"Invalid value {value} for configuration {key}: Expected value to be either true or false", code
        )


def check_dynamic(changes: dict[str, str]) -> None:
    """Refuse keys that cannot change at runtime and values of the wrong type, as Kafka words it."""
    static = sorted(key for key in changes if key not in DYNAMIC_BROKER_KEYS)
    if static:
        raise DynamicConfigError(f"Cannot update these configs dynamically: [{', '.join(static)}]")
    for key, value in changes.items():
        check_type(key, BROKER_CONFIGS[key].type, value)
        minimum = DYNAMIC_MINIMUMS.get(key)
        if minimum is not None and int(value) < minimum:
            raise DynamicConfigError(
                f"Invalid value {value} for configuration {key}: Value must be at least {minimum}"
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

    def candidate(self, config: BrokerConfig, entity: str, updated: dict[str, str]) -> BrokerConfig:
        """``config`` with ``entity``'s layer replaced by ``updated``, checked as a start-up
        config would be (types, the log settings derived from it)."""
        check_dynamic(updated)
        default, node = (updated, self.node) if entity == DEFAULT_ENTITY else (self.default, updated)
        result = config.with_dynamic(default, node)
        try:
            result.validate()
        except ConfigError as exc:
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
        """Put the saved layers under ``config``; a saved set the static config now makes
        invalid is left out with an ERROR (Kafka skips invalid dynamic configs too)."""
        try:
            self.candidate(config, DEFAULT_ENTITY, self.default)
            self.candidate(config, "node", self.node)
        except DynamicConfigError as exc:
            log.error("ignoring the dynamic broker configs in %s: %s", self.path, exc)
            return
        config.set_dynamic(self.default, self.node)
