"""Broker configuration: ``server.properties`` + environment + CLI overrides, Kafka's way.

Precedence (lowest to highest): defaults, the properties file, ``ODRADEK_*`` environment
variables, ``--override key=value`` flags.  Environment names follow the convention Kafka's
container images use: ``ODRADEK_LOG_DIRS`` -> ``log.dirs`` (``_`` is ``.``, ``__`` is ``_``,
``___`` is ``-``).  Unknown keys are kept and reported, never silently dropped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from broker.config_defs import BROKER_CONFIGS, DERIVED_MS_KEYS, TOPIC_CONFIGS, ConfigSource, ConfigType
from log.config import LogConfig
from log.errors import InvalidConfigError

ENV_PREFIX = "ODRADEK_"


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message says how to fix it."""


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (the subset Kafka configs use).

    Supports ``key=value``, ``key: value`` and ``key value``, ``#``/``!`` comments and
    backslash line continuations, which covers every ``server.properties`` Kafka ships.
    """
    result: dict[str, str] = {}
    logical: list[str] = []
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical.append(line[:-1])
            continue
        logical.append(line)
        entry = "".join(logical)
        logical = []
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", entry)
        if match:
            result[match.group(1)] = match.group(2).strip()
        else:
            result[entry] = ""
    return result


def env_overrides(environ: Mapping[str, str]) -> dict[str, str]:
    """Config keys set through ``ODRADEK_*`` environment variables."""
    found: dict[str, str] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX) or name == ENV_PREFIX:
            continue
        key = name[len(ENV_PREFIX) :].lower()
        key = key.replace("___", "\0dash\0").replace("__", "\0us\0").replace("_", ".")
        found[key.replace("\0dash\0", "-").replace("\0us\0", "_")] = value
    return found


@dataclass(frozen=True, slots=True)
class Listener:
    """One ``NAME://host:port`` entry of ``listeners``/``advertised.listeners``."""

    name: str
    host: str
    port: int


def parse_listeners(text: str) -> list[Listener]:
    """Parse Kafka's listener list; an empty host means all interfaces."""
    listeners = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = re.fullmatch(r"([A-Za-z0-9_]+)://(\[[^\]]*\]|[^:]*):(\d+)", item)
        if not match:
            raise ConfigError(
                f"listener {item!r} is not of the form NAME://host:port (e.g. PLAINTEXT://localhost:9092)"
            )
        host = match.group(2).strip("[]")
        listeners.append(Listener(match.group(1).upper(), host, int(match.group(3))))
    if not listeners:
        raise ConfigError("no listeners configured: set listeners=PLAINTEXT://localhost:9092")
    return listeners


def parse_metrics_listener(text: str) -> tuple[str, int]:
    """``metrics.listener`` as (host, port): ``http://HOST:PORT``, an empty host meaning every
    interface, as in ``listeners``."""
    match = re.fullmatch(r"http://(\[[^\]]*\]|[^:/]*):(\d+)/?", text.strip())
    if not match or int(match.group(2)) > 65535:
        raise ConfigError(
            f"metrics.listener={text!r} is not of the form http://host:port (e.g. http://:9404)"
        )
    return match.group(1).strip("[]"), int(match.group(2))


def parse_security_protocol_map(text: str) -> dict[str, str]:
    """Parse ``listener.security.protocol.map`` (``NAME:PROTOCOL,...``), names upper-cased."""
    mapping: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip() or not protocol.strip():
            raise ConfigError(
                f"listener.security.protocol.map entry {item!r} is not of the form NAME:PROTOCOL"
            )
        mapping[name.strip().upper()] = protocol.strip().upper()
    return mapping


def check_plaintext_only(listeners: list[Listener], protocol_map_text: str) -> None:
    """Refuse any listener whose security protocol is not PLAINTEXT.

    Odradek implements neither TLS nor SASL yet.  Starting an ``SSL://`` listener that then
    speaks plaintext would silently send what the operator believes encrypted in the clear, and
    clients configured for TLS would fail with confusing handshake errors; refusing to start is
    the only honest answer.  As in Kafka, a listener's protocol comes from
    ``listener.security.protocol.map`` and a name missing from the map is an error.
    """
    protocols = parse_security_protocol_map(protocol_map_text)
    for listener in listeners:
        protocol = protocols.get(listener.name)
        if protocol is None:
            raise ConfigError(
                f"listener {listener.name} has no security protocol: add {listener.name}:PLAINTEXT "
                "to listener.security.protocol.map"
            )
        if protocol != "PLAINTEXT":
            raise ConfigError(
                f"listener {listener.name} uses security protocol {protocol}, which Odradek does not "
                "implement yet (only PLAINTEXT); refusing to start rather than serve it unencrypted "
                "and unauthenticated"
            )


@dataclass
class BrokerConfig:
    """Effective broker configuration with Kafka's defaults filled in."""

    explicit: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(
        cls,
        properties_file: str | os.PathLike[str] | None = None,
        overrides: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> BrokerConfig:
        """Build a config from a properties file, the environment and explicit overrides."""
        values: dict[str, str] = {}
        if properties_file is not None:
            path = Path(properties_file)
            try:
                values.update(parse_properties(path.read_text(encoding="utf-8")))
            except OSError as exc:
                raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
        values.update(env_overrides(os.environ if environ is None else environ))
        values.update(overrides or {})
        config = cls(values)
        config.validate()
        return config

    @property
    def unknown_keys(self) -> list[str]:
        """Keys that are neither broker nor topic configs (reported at start-up)."""
        return sorted(k for k in self.explicit if k not in BROKER_CONFIGS and k not in TOPIC_CONFIGS)

    def validate(self) -> None:
        """Check every known key's value parses as its declared type."""
        for key, value in self.explicit.items():
            definition = BROKER_CONFIGS.get(key)
            if definition is not None:
                check_value(key, definition.type, value)
        try:
            LogConfig.from_properties(self.topic_defaults())
        except InvalidConfigError as exc:
            raise ConfigError(f"{exc} (a topic default derived from the broker's log settings)") from None
        check_plaintext_only(self.listeners, self.get("listener.security.protocol.map") or "")
        if self.get("advertised.listeners"):
            parse_listeners(self.get("advertised.listeners") or "")
        if self.get("metrics.listener"):
            parse_metrics_listener(self.get("metrics.listener") or "")

    def get(self, key: str) -> str | None:
        """The effective value of a broker key (explicit, derived, or default)."""
        if key in self.explicit:
            return self.explicit[key]
        for coarser, factor in DERIVED_MS_KEYS.get(key, ()):
            value = self.get(coarser)
            if value is not None:
                # Kafka: a negative hours/minutes value means "unlimited", which is -1 in ms.
                return str(int(value) * factor) if int(value) >= 0 else "-1"
        definition = BROKER_CONFIGS.get(key)
        return definition.default if definition else None

    def source(self, key: str) -> ConfigSource:
        """Where a broker key's value comes from, as DescribeConfigs reports it."""
        return ConfigSource.STATIC_BROKER_CONFIG if key in self.explicit else ConfigSource.DEFAULT_CONFIG

    def get_int(self, key: str) -> int:
        value = self.get(key)
        if value is None:
            raise ConfigError(f"{key} has no value")
        return int(value)

    def get_bool(self, key: str) -> bool:
        return (self.get(key) or "false").lower() == "true"

    @property
    def node_id(self) -> int:
        broker_id = self.get_int("broker.id")
        return self.get_int("node.id") if "node.id" in self.explicit or broker_id < 0 else broker_id

    @property
    def log_dirs(self) -> list[str]:
        dirs = self.get("log.dirs") or self.get("log.dir") or ""
        return [d.strip() for d in dirs.split(",") if d.strip()]

    @property
    def listeners(self) -> list[Listener]:
        return parse_listeners(self.get("listeners") or "")

    @property
    def advertised_listeners(self) -> list[Listener]:
        """Advertised addresses; a listener bound to all interfaces advertises localhost."""
        text = self.get("advertised.listeners")
        if text:
            return parse_listeners(text)
        return [
            Listener(lst.name, lst.host if lst.host not in ("", "0.0.0.0", "::") else "localhost", lst.port)
            for lst in self.listeners
        ]

    def topic_defaults(self) -> dict[str, str]:
        """Topic-level config values inherited from this broker's settings."""
        defaults = {}
        for name, definition in TOPIC_CONFIGS.items():
            value = self.get(definition.broker_synonym) or definition.default
            if value is not None:
                defaults[name] = value
        return defaults


def check_value(key: str, type_: ConfigType, value: str) -> None:
    """Raise ConfigError unless ``value`` parses as ``type_`` (Kafka's ConfigDef types)."""
    try:
        if type_ in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
            int(value)
        elif type_ == ConfigType.DOUBLE:
            float(value)
        elif type_ == ConfigType.BOOLEAN and value.lower() not in ("true", "false"):
            raise ValueError(value)
    except ValueError as exc:
        raise ConfigError(f"{key}={value!r} is not a valid {type_.name.lower()}") from exc
