"""Per-topic log settings, named and defaulted as Apache Kafka's topic configs.

One declarative table (``_SETTINGS``) drives everything: the topic-level key, the dataclass
field, how to parse and validate the string value, and how to render it back.  The engine
knows topic-level keys only; which ``server.properties`` key each one inherits from is the
broker's business (``broker/config/config_defs.py``), so that mapping exists once.

Retention (``log.retention``) and compaction (``log.cleaner``) act on these settings; the
broker drives both periodically.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from log.errors import InvalidConfigError
from wire.primitives import INT32_MAX

LONG_MAX = 2**63 - 1
_HOURS = 3_600_000


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The settings one partition log obeys (Kafka topic-level config, Kafka's defaults)."""

    segment_bytes: int = 1_073_741_824
    segment_ms: int = 7 * 24 * _HOURS
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10_485_760
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1_048_588
    message_timestamp_type: str = "CreateTime"
    compression_type: str = "producer"
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = _HOURS  # Kafka 4 default: at most an hour ahead
    retention_ms: int = 7 * 24 * _HOURS
    retention_bytes: int = -1
    cleanup_policy: tuple[str, ...] = ("delete",)
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    min_insync_replicas: int = 1
    delete_retention_ms: int = 24 * _HOURS
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    file_delete_delay_ms: int = 60_000

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        """Whether retention by time and size applies (``delete`` or ``compact,delete``)."""
        return "delete" in self.cleanup_policy

    def random_segment_jitter(self) -> int:
        """Per-segment roll jitter in [0, min(jitter, segment.ms)), drawn as Kafka does.

        Jitter exists so that many partitions created together do not all roll (and later
        expire) in the same instant.
        """
        if self.segment_jitter_ms == 0:
            return 0
        return random.randrange(min(self.segment_jitter_ms, self.segment_ms))

    @classmethod
    def from_properties(cls, props: Mapping[str, str], base: LogConfig | None = None) -> LogConfig:
        """Apply topic-level keys (``segment.bytes``, ...) on top of ``base`` (default: Kafka's).

        Keys this engine does not model are ignored: deciding whether a name is a valid Kafka
        topic config at all is the broker's job (it answers INVALID_CONFIG); a bad *value* for a
        modelled key raises ``InvalidConfigError`` here.
        """
        changes: dict[str, Any] = {}
        for setting in _SETTINGS:
            if setting.key in props:
                changes[setting.field] = setting.parse(setting.key, props[setting.key])
        return dataclasses.replace(base or cls(), **changes)

    def to_properties(self) -> dict[str, str]:
        """Topic-level key -> string value for every setting (DescribeConfigs, debugging)."""
        return {setting.key: setting.render(getattr(self, setting.field)) for setting in _SETTINGS}


class _Setting(NamedTuple):
    key: str
    field: str
    parse: Callable[[str, str], Any]
    render: Callable[[Any], str]


def _long(minimum: int, maximum: int = LONG_MAX) -> Callable[[str, str], int]:
    def parse(key: str, text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise InvalidConfigError(f"{key}: {text!r} is not an integer") from None
        if not minimum <= value <= maximum:
            raise InvalidConfigError(f"{key}: {value} is outside [{minimum}, {maximum}]")
        return value

    return parse


def _ratio(key: str, text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise InvalidConfigError(f"{key}: {text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise InvalidConfigError(f"{key}: {value} is outside [0, 1]")
    return value


def _timestamp_type(key: str, text: str) -> str:
    value = text.strip()
    if value not in ("CreateTime", "LogAppendTime"):
        raise InvalidConfigError(f"{key}: {text!r} is not CreateTime or LogAppendTime")
    return value


COMPRESSION_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")


def _compression_type(key: str, text: str) -> str:
    value = text.strip()
    if value not in COMPRESSION_TYPES:
        raise InvalidConfigError(f"{key}: {text!r} is not one of {', '.join(COMPRESSION_TYPES)}")
    return value


def _cleanup_policy(key: str, text: str) -> tuple[str, ...]:
    policies = tuple(p.strip() for p in text.split(",") if p.strip())
    if not set(policies) <= {"delete", "compact"}:
        raise InvalidConfigError(f"{key}: {text!r} must be a list of delete and compact")
    return policies


_SETTINGS: tuple[_Setting, ...] = (
    _Setting("segment.bytes", "segment_bytes", _long(14, INT32_MAX), str),
    _Setting("segment.ms", "segment_ms", _long(1), str),
    _Setting("segment.jitter.ms", "segment_jitter_ms", _long(0), str),
    _Setting("segment.index.bytes", "segment_index_bytes", _long(4, INT32_MAX), str),
    _Setting("index.interval.bytes", "index_interval_bytes", _long(0, INT32_MAX), str),
    _Setting("max.message.bytes", "max_message_bytes", _long(0, INT32_MAX), str),
    _Setting("compression.type", "compression_type", _compression_type, str),
    _Setting("message.timestamp.type", "message_timestamp_type", _timestamp_type, str),
    _Setting("message.timestamp.before.max.ms", "message_timestamp_before_max_ms", _long(0), str),
    _Setting("message.timestamp.after.max.ms", "message_timestamp_after_max_ms", _long(0), str),
    _Setting("retention.ms", "retention_ms", _long(-1), str),
    _Setting("retention.bytes", "retention_bytes", _long(-LONG_MAX), str),
    _Setting("cleanup.policy", "cleanup_policy", _cleanup_policy, ",".join),
    _Setting("flush.messages", "flush_messages", _long(1), str),
    _Setting("flush.ms", "flush_ms", _long(0), str),
    _Setting("min.insync.replicas", "min_insync_replicas", _long(1, INT32_MAX), str),
    _Setting("delete.retention.ms", "delete_retention_ms", _long(0), str),
    _Setting("min.compaction.lag.ms", "min_compaction_lag_ms", _long(0), str),
    _Setting("max.compaction.lag.ms", "max_compaction_lag_ms", _long(1), str),
    _Setting("min.cleanable.dirty.ratio", "min_cleanable_dirty_ratio", _ratio, str),
    _Setting("file.delete.delay.ms", "file_delete_delay_ms", _long(0), str),
)
