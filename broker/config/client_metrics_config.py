"""Client metrics subscriptions (KIP-714): their three keys, Kafka's validation, and matching.

A subscription is a CLIENT_METRICS config resource (type 16) named by the operator
(``kafka-client-metrics --alter --name NAME``) with up to three keys:

- ``metrics``: metric name prefixes the matching clients should push (``*`` for all);
- ``interval.ms``: how often they push, 100 ms to one hour (default five minutes);
- ``match``: ``selector=regex`` pairs that all must match a client (none: every client).

Validation follows Kafka 4.3's ``ClientMetricsConfigs`` and the broker's config parsing, with
the same error codes and messages: an unknown key or an interval out of range is
INVALID_REQUEST, a value that does not parse is INVALID_CONFIG. Match patterns are regular
expressions that must match a client's whole attribute (Java's ``Matcher.matches``); they are
compiled with RE2, as consumer-group topic regexes are (``coordinator.topic_regex``), so a
hostile pattern cannot stall the event loop: a pattern using what RE2 lacks (backreferences,
lookaround) is refused as an illegal pattern, where Kafka's ``java.util.regex`` accepts it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import re2

from broker.config.config_defs import ConfigType
from wire.error_codes import ErrorCode
from wire.primitives import INT32_MAX

METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
ALL_METRICS = "*"
DEFAULT_INTERVAL_MS = 300_000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000

MATCH_SELECTORS = frozenset(
    {
        "client_instance_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "client_source_address",
        "client_source_port",
    }
)


@dataclass(frozen=True, slots=True)
class ClientMetricsKey:
    """One key of a subscription, as DescribeConfigs reports it when it is not set."""

    name: str
    type: ConfigType
    default: str
    doc: str


KEYS: dict[str, ClientMetricsKey] = {
    key.name: key
    for key in (
        ClientMetricsKey(METRICS, ConfigType.LIST, "", "Telemetry metric name prefix list"),
        ClientMetricsKey(
            INTERVAL_MS, ConfigType.INT, str(DEFAULT_INTERVAL_MS), "Metrics push interval in milliseconds"
        ),
        ClientMetricsKey(MATCH, ConfigType.LIST, "", "Client match criteria"),
    )
}
"""In Kafka's definition order, which is also the order its parser reports errors in."""

_JAVA_WHITESPACE = "".join(chr(c) for c in range(33))  # what Java's String.trim() removes

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a client's bad pattern must not write to the broker's stderr


class ClientMetricsConfigError(Exception):
    """A subscription Kafka would refuse: the error code and message it answers with."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def parse_list(value: str) -> list[str]:
    """Kafka's LIST parsing: trimmed, split on commas with the spaces around them; "" is []."""
    trimmed = value.strip(_JAVA_WHITESPACE)
    if not trimmed:
        return []
    return [item.strip(_JAVA_WHITESPACE) for item in trimmed.split(",")]


@dataclass(frozen=True, slots=True)
class Subscription:
    """A validated subscription, ready to be matched against clients."""

    name: str
    metrics: frozenset[str]
    interval_ms: int
    patterns: tuple[tuple[str, re2._Regexp], ...]

    def matches(self, attributes: Mapping[str, str]) -> bool:
        """Whether every pattern matches the whole of its attribute (no pattern: any client)."""
        for selector, pattern in self.patterns:
            value = attributes.get(selector)
            if value is None or pattern.fullmatch(value) is None:
                return False
        return True


def _illegal_pattern(pattern: str) -> ClientMetricsConfigError:
    return ClientMetricsConfigError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}")


def parse_pattern(pattern: str) -> tuple[str, re2._Regexp]:
    """``selector=regex`` split at its one '=' (Java's ``split``, which drops trailing empties)."""
    parts = pattern.split("=")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if len(parts) != 2:
        raise _illegal_pattern(pattern)
    selector = parts[0].strip(_JAVA_WHITESPACE)
    if selector not in MATCH_SELECTORS:
        raise _illegal_pattern(pattern)
    try:
        return selector, re2.compile(parts[1].strip(_JAVA_WHITESPACE), _RE2_OPTIONS)
    except re2.error:
        raise _illegal_pattern(pattern) from None


def _parse_int(key: str, value: str) -> int:
    """Java's ``Integer.parseInt`` of the trimmed value, with Kafka's message when it fails."""
    text = value.strip(_JAVA_WHITESPACE)
    digits = text[1:] if text[:1] in ("+", "-") else text
    if digits.isascii() and digits.isdigit() and -INT32_MAX - 1 <= int(text) <= INT32_MAX:
        return int(text)
    raise ClientMetricsConfigError(
        ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {key}: Not a number of type INT"
    )


def _parse_list_value(key: str, values: Mapping[str, str]) -> list[str]:
    items = parse_list(values.get(key, ""))
    if "" in items:
        raise ClientMetricsConfigError(
            ErrorCode.INVALID_CONFIG, f"Configuration '{key}' values must not be empty."
        )
    return items


def _parse_values(values: Mapping[str, str]) -> tuple[list[str], int, list[str]]:
    """Each key's value parsed as its type, in Kafka's order, defaults for the keys not given."""
    metrics = _parse_list_value(METRICS, values)
    interval = _parse_int(INTERVAL_MS, values[INTERVAL_MS]) if INTERVAL_MS in values else DEFAULT_INTERVAL_MS
    return metrics, interval, _parse_list_value(MATCH, values)


def parse_subscription(name: str, values: Mapping[str, str]) -> Subscription:
    """Validate a subscription as Kafka's ``ClientMetricsConfigs.validate`` does, and compile it."""
    if not name:
        raise ClientMetricsConfigError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key in values:
        if key not in KEYS:
            raise ClientMetricsConfigError(
                ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}"
            )
    metrics, interval, patterns = _parse_values(values)
    if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
        raise ClientMetricsConfigError(
            ErrorCode.INVALID_REQUEST,
            f"Invalid value {interval} for {INTERVAL_MS}, interval must be between "
            f"{MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)",
        )
    compiled = dict(parse_pattern(pattern) for pattern in patterns)  # a repeated selector: the last wins
    return Subscription(name, frozenset(metrics), interval, tuple(compiled.items()))
