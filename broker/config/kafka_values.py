"""Kafka's ``ConfigDef`` parsing and validators, for broker values set through AlterConfigs.

Kafka parses a config value by its declared type (``Integer.parseInt`` on the trimmed text,
``Double.parseDouble``, ...) and then runs the key's validator; a client sees the
``ConfigException`` text, "Invalid value X for configuration Y: reason". The dynamic broker keys
(:mod:`broker.config.config.kafka_dynamic_keys`, generated from Kafka's jars) name their validators, and this
module reproduces the ones they use, so a refused value reads exactly as on Kafka. Two things
cannot be reproduced and are accepted as given: CLASS values (Kafka loads the class) and
validators Kafka writes as code, except those :data:`DESCRIBED_CHECKS` spells out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal

from broker.config.config_defs import ConfigType


class InvalidValue(ValueError):
    """A value Kafka's ConfigDef refuses; the text is Kafka's."""


@dataclass(frozen=True, slots=True)
class Range:
    """``ConfigDef.Range``: bounds as Kafka prints them (``"1048576"``, ``"0.5"``), None if open."""

    min: str | None
    max: str | None


@dataclass(frozen=True, slots=True)
class Choices:
    """``ConfigDef.ValidString``: the value must be one of these."""

    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ListOf:
    """``ConfigDef.ValidList``: each element must be one of ``values`` (any, when empty)."""

    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Described:
    """A validator Kafka writes as code, known by its description (``"[1,...,9] or -1"``)."""

    text: str


Validator = Range | Choices | ListOf | Described | None


@dataclass(frozen=True, slots=True)
class KafkaKey:
    """One of Kafka's dynamic broker keys: its type, its default as Kafka prints it, whether only
    a broker (not the cluster-wide default) may set it, and its validator."""

    name: str
    type: ConfigType
    default: str | None
    per_broker: bool
    validator: Validator = None


def _gzip_level(value: object) -> str | None:
    level = value if isinstance(value, int) else 0
    return None if level == -1 or 1 <= level <= 9 else "Value must be between 1 and 9 or equal to -1"


DESCRIBED_CHECKS: dict[str, Callable[[object], str | None]] = {"[1,...,9] or -1": _gzip_level}
"""The code-written validators of Kafka's dynamic keys, by description: each returns Kafka's
reason for refusing a parsed value, or None. A test fails when a key's validator is missing here."""

_INTEGER = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
_BITS = {ConfigType.SHORT: 16, ConfigType.INT: 32, ConfigType.LONG: 64}
_LIST_SEPARATOR = re.compile(r"\s*,\s*")


def invalid(key: str, value: object, reason: str) -> InvalidValue:
    """Kafka's ``new ConfigException(name, value, message)``."""
    return InvalidValue(f"Invalid value {value} for configuration {key}: {reason}")


def parse(key: str, type_: ConfigType, text: str) -> object:
    """``ConfigDef.parseType``: the value as Kafka's types see it, or Kafka's refusal."""
    trimmed = text.strip()
    if type_ in _BITS:
        bound = 1 << (_BITS[type_] - 1)
        if _INTEGER.fullmatch(trimmed) and -bound <= int(trimmed) < bound:
            return int(trimmed)
        raise invalid(key, text, f"Not a number of type {type_.name}")
    if type_ == ConfigType.DOUBLE:
        if _DOUBLE.fullmatch(trimmed):
            return float(trimmed.rstrip("fFdD").replace("Infinity", "inf"))
        raise invalid(key, text, "Not a number of type DOUBLE")
    if type_ == ConfigType.BOOLEAN:
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise invalid(key, text, "Expected value to be either true or false")
    if type_ == ConfigType.LIST:
        return _LIST_SEPARATOR.split(trimmed) if trimmed else []
    return trimmed if type_ in (ConfigType.STRING, ConfigType.CLASS) else text


def check(key: str, definition: KafkaKey, text: str) -> None:
    """Parse ``text`` as ``definition`` says and run its validator, reporting it as ``key``."""
    value = parse(key, definition.type, text)
    validator = definition.validator
    if isinstance(validator, Range):
        _check_range(key, value, validator)
    elif isinstance(validator, Choices) and value not in validator.values:
        raise invalid(key, value, f"String must be one of: {', '.join(validator.values)}")
    elif isinstance(validator, ListOf) and validator.values and isinstance(value, list):
        for item in value:
            if item not in validator.values:
                raise invalid(key, item, f"String must be one of: {', '.join(validator.values)}")
    elif isinstance(validator, Described):
        reason = DESCRIBED_CHECKS[validator.text](value)
        if reason is not None:
            raise invalid(key, value, reason)


def _check_range(key: str, value: object, bounds: Range) -> None:
    number = float(value) if isinstance(value, int | float) else 0.0
    if bounds.min is not None and number < float(bounds.min):
        raise invalid(key, java_number_text(value), f"Value must be at least {bounds.min}")
    if bounds.max is not None and number > float(bounds.max):
        raise invalid(key, java_number_text(value), f"Value must be no more than {bounds.max}")


def java_number_text(value: object) -> str:
    """A parsed number as Java's ``toString`` prints it (``1.0E10`` for a large double)."""
    if not isinstance(value, float):
        return str(value)
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)  # Python writes these as Java does: shortest digits, at least one decimal
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    shown = "".join(map(str, digits))
    return f"{'-' if sign else ''}{shown[0]}.{shown[1:] or '0'}E{int(exponent) + len(shown) - 1}"


def java_hash_set_text(names: Iterable[str], initial_capacity: int = 16) -> str:
    """``names`` as a Java ``HashSet<String>`` prints them: Kafka's messages list keys that way
    ("Cannot update these configs dynamically: [num.partitions, broker.id, log.dirs]"), in the
    order of their hash buckets, which depends only on the names and the table's size."""
    ordered = list(dict.fromkeys(names))
    capacity = 1 << max(initial_capacity - 1, 1).bit_length()
    while len(ordered) > capacity * 0.75:
        capacity *= 2

    def bucket(name: str) -> int:
        code = 0
        encoded = name.encode("utf-16-be")
        for high, low in zip(encoded[::2], encoded[1::2], strict=True):
            code = (31 * code + (high << 8 | low)) & 0xFFFFFFFF
        return (code ^ (code >> 16)) & (capacity - 1)

    return f"[{', '.join(sorted(ordered, key=bucket))}]"
