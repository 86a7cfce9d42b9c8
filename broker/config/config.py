"""Broker configuration: ``server.properties`` + environment + CLI overrides, Kafka's way.

Precedence (lowest to highest): defaults, the properties file, ``ODRADEK_*`` environment
variables, ``--override key=value`` flags.  Environment names follow the convention Kafka's
container images use: ``ODRADEK_LOG_DIRS`` -> ``log.dirs`` (``_`` is ``.``, ``__`` is ``_``,
``___`` is ``-``).  Unknown keys are kept and reported, never silently dropped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from broker.config.config_defs import (
    BROKER_CONFIGS,
    DERIVED_MS_KEYS,
    LIVE_BROKER_KEYS,
    TOPIC_CONFIGS,
    ConfigSource,
    ConfigType,
)
from broker.config.kafka_dynamic_keys import DYNAMIC_KEYS
from log.config import LogConfig
from log.errors import InvalidConfigError

ENV_PREFIX = "ODRADEK_"
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
"""The one ``replica.selector.class`` Odradek implements (Kafka's name; KIP-392)."""


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message says how to fix it."""


def with_default(get: Callable[[str], str | None], key: str) -> str:
    """``get(key)``, or the key's default from the broker table where that is unset or empty.

    For values :meth:`BrokerConfig.validate` does not see (a listener's ``listener.name.*``
    override may be empty): the fallback is read from ``broker/config/config_defs.py`` instead of
    being written a second time at the call.
    """
    return get(key) or BROKER_CONFIGS[key].default or ""


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


# ``ODRADEK_`` variables that are not broker config keys.
NOT_CONFIG_VARIABLES = frozenset({ENV_PREFIX})


def env_overrides(environ: Mapping[str, str]) -> dict[str, str]:
    """Config keys set through ``ODRADEK_*`` environment variables."""
    found: dict[str, str] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX) or name in NOT_CONFIG_VARIABLES:
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


def host_and_port(host: str, port: int) -> str:
    """``host:port`` as listeners and ``metrics.listener`` write it: an IPv6 host in brackets
    (what the parsers here take the brackets off again)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


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


LISTENER_PREFIX = re.compile(r"listener\.name\.[a-z0-9_]+\.")


def _per_listener(key: str) -> bool:
    """``listener.name.<listener>.<key>`` (or ``.<mechanism>.sasl.jaas.config``) overrides."""
    match = LISTENER_PREFIX.match(key)
    if match is None:
        return False
    rest = key[match.end() :]
    return (
        rest in BROKER_CONFIGS
        or rest.endswith(".sasl.jaas.config")
        or rest.endswith(".callback.handler.class")
    )


@dataclass
class BrokerConfig:
    """Effective broker configuration with Kafka's defaults filled in.

    ``explicit`` is the static configuration (file, environment, overrides). The dynamic
    layers set through the admin API (:mod:`broker.config.config.dynamic_config`) sit above it in Kafka's
    order: a key set for this node (``dynamic_node``) beats the cluster-wide default
    (``dynamic_default``), which beats the static value. Every ``get`` reads the merged view,
    so code that looks a key up when it uses it sees a change at once. Only the dynamic keys
    that work at runtime here (``LIVE_BROKER_KEYS``) reach that view; the others Kafka accepts
    are kept in the layers, and described, but never used (``broker/config/kafka_dynamic_keys.py``).
    """

    explicit: dict[str, str] = field(default_factory=dict)
    dynamic_default: dict[str, str] = field(default_factory=dict)
    dynamic_node: dict[str, str] = field(default_factory=dict)
    _merged: dict[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._merged = self.explicit | _live(self.dynamic_default) | _live(self.dynamic_node)

    def with_dynamic(self, default: Mapping[str, str], node: Mapping[str, str]) -> BrokerConfig:
        """The same static configuration under other dynamic layers (validated by the caller)."""
        return BrokerConfig(dict(self.explicit), dict(default), dict(node))

    def set_dynamic(self, default: Mapping[str, str], node: Mapping[str, str]) -> None:
        """Replace the dynamic layers in place: every holder of this config sees them."""
        self.dynamic_default, self.dynamic_node = dict(default), dict(node)
        self.__post_init__()

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
        return sorted(
            k
            for k in self.explicit
            if k not in BROKER_CONFIGS and k not in TOPIC_CONFIGS and not _per_listener(k)
        )

    def validate(self) -> None:
        """Check every known key's value parses as its declared type."""
        for key, value in self._merged.items():
            definition = BROKER_CONFIGS.get(key)
            if definition is not None:
                check_value(key, definition.type, value)
        if self.get_int("telemetry.max.bytes") < 1:
            raise ConfigError(
                f"telemetry.max.bytes must be at least 1 (Kafka's bound), not {self.get('telemetry.max.bytes')}"
            )
        try:
            LogConfig.from_properties(self.topic_defaults())
        except InvalidConfigError as exc:
            raise ConfigError(f"{exc} (a topic default derived from the broker's log settings)") from None
        parse_security_protocol_map(self.get("listener.security.protocol.map") or "")
        self.listeners  # noqa: B018 - parses them; each listener's security is checked by the broker
        if self.get("advertised.listeners"):
            parse_listeners(self.get("advertised.listeners") or "")
        names = {listener.name for listener in self.listeners}
        for shared in self.shared_listeners:
            if shared.name not in names:
                raise ConfigError(f"shared.listeners names {shared.name}, which listeners does not define")
        self.processes  # noqa: B018 - parses num.processes
        if self.get("metrics.listener"):
            parse_metrics_listener(self.get("metrics.listener") or "")
        selector = self.get("replica.selector.class")
        if selector and selector != RACK_AWARE_SELECTOR:
            raise ConfigError(
                f"replica.selector.class={selector} is not available in Odradek; it has {RACK_AWARE_SELECTOR}"
            )

    def get(self, key: str) -> str | None:
        """The effective value of a broker key (explicit, derived, or default)."""
        if key in self._merged:
            return self._merged[key]
        for coarser, factor in DERIVED_MS_KEYS.get(key, ()):
            value = self.get(coarser)
            if value is not None:
                # Kafka: a negative hours/minutes value means "unlimited", which is -1 in ms.
                return str(int(value) * factor) if int(value) >= 0 else "-1"
        return default_value(key)

    def source(self, key: str) -> ConfigSource:
        """Where a broker key's value comes from, as DescribeConfigs reports it."""
        return self.layers(key)[0][0]

    def layers(self, key: str) -> list[tuple[ConfigSource, str | None]]:
        """Every layer that sets ``key``, highest precedence first, then its default (Kafka's
        synonym chain for one key name)."""
        found = [
            (source, layer[key])
            for source, layer in (
                (ConfigSource.DYNAMIC_BROKER_CONFIG, self.dynamic_node),
                (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, self.dynamic_default),
                (ConfigSource.STATIC_BROKER_CONFIG, self.explicit),
            )
            if key in layer
        ]
        return [*found, (ConfigSource.DEFAULT_CONFIG, default_value(key))]

    def configured(self, key: str) -> str | None:
        """The value a key is set to in the highest layer that sets it, else its default: what
        DescribeConfigs shows, and what Kafka's checks of a change compare with, even for a
        dynamic key that has no effect here."""
        return self.layers(key)[0][1]

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
    def shared_listeners(self) -> list[Listener]:
        text = self.get("shared.listeners") or ""
        return parse_listeners(text) if text.strip() else []

    @property
    def processes(self) -> int:
        """``num.processes``: a positive count, or ``auto`` for the cores this process may use."""
        value = (self.get("num.processes") or "1").strip()
        if value == "auto":
            return len(os.sched_getaffinity(0))
        if not value.isdigit() or int(value) < 1:
            raise ConfigError(f"num.processes must be a positive number or auto, not {value!r}")
        return int(value)

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


def _live(layer: Mapping[str, str]) -> dict[str, str]:
    return {key: value for key, value in layer.items() if key in LIVE_BROKER_KEYS}


def default_value(key: str) -> str | None:
    """A broker key's default: Odradek's table, else Kafka's for its other dynamic keys."""
    definition = BROKER_CONFIGS.get(key)
    if definition is not None:
        return definition.default
    kafka_key = DYNAMIC_KEYS.get(key)
    return kafka_key.default if kafka_key else None


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
