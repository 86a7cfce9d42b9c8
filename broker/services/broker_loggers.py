"""BROKER_LOGGER config resources (type 8): the broker's log levels, read and changed live.

``kafka-configs --entity-type broker-loggers --entity-name 1`` describes Kafka's log4j loggers
and sets their levels with IncrementalAlterConfigs; here the same requests act on Python's
``logging`` loggers. As in Kafka, only existing loggers can be set (so a client cannot create
loggers without bound), ``root`` cannot be removed, a removed logger inherits its parent's
level again, and levels are not kept across a restart.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.config.dynamic_config import DynamicConfigError
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import IncrementalAlterConfigsRequestConfigs

ROOT = "root"
TRACE = 5  # Python has no TRACE level; Kafka's sits below DEBUG
LEVELS = {
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
}
SET, DELETE = 0, 1


def level_name(level: int) -> str:
    """Kafka's name for a Python level (the nearest named level at or below it)."""
    return max(((value, name) for name, value in LEVELS.items() if value <= level), default=(TRACE, "TRACE"))[
        1
    ]


def _logger(name: str) -> logging.Logger:
    return logging.getLogger() if name == ROOT else logging.getLogger(name)


def known_loggers() -> list[str]:
    """``root`` and every logger created so far (placeholders of dotted parents included)."""
    return [ROOT, *sorted(logging.root.manager.loggerDict)]


def describe_levels(keys: list[str] | None) -> list[tuple[str, str]]:
    """(logger, effective level) for each logger asked for (all when ``keys`` is None)."""
    names = known_loggers()
    if keys is not None:
        known = set(names)
        names = [k for k in keys if k in known]
    return [(name, level_name(_logger(name).getEffectiveLevel())) for name in names]


def check_changes(changes: list[IncrementalAlterConfigsRequestConfigs]) -> None:
    """Refuse what Kafka's ConfigAdminManager refuses for BROKER_LOGGER, in its words."""
    loggers = set(known_loggers())
    for change in changes:
        name, op, value = change["name"], change["config_operation"], change["value"]
        if name not in loggers:
            raise DynamicConfigError(f"Logger {name} does not exist!", ErrorCode.INVALID_CONFIG)
        if op == SET and (value or "") not in LEVELS:
            raise DynamicConfigError(
                f"Cannot set the log level of {name} to {value} as it is not a supported log level. "
                f"Valid log levels are {', '.join(sorted(LEVELS))}",
                ErrorCode.INVALID_CONFIG,
            )
        if op == DELETE and name == ROOT:
            raise DynamicConfigError(
                "Removing the log level of the root logger is not allowed", ErrorCode.INVALID_REQUEST
            )
        if op not in (SET, DELETE):
            raise DynamicConfigError(
                f"Operation {op} is not supported for BROKER_LOGGER resources", ErrorCode.INVALID_REQUEST
            )


def apply_changes(changes: list[IncrementalAlterConfigsRequestConfigs]) -> None:
    """Set or unset levels; checked by :func:`check_changes` first."""
    for change in changes:
        logger = _logger(change["name"])
        logger.setLevel(
            LEVELS[change["value"] or ""] if change["config_operation"] == SET else logging.NOTSET
        )
