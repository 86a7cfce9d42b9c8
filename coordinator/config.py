"""The group and transaction coordinators' settings, read from the broker config under Kafka's key names.

Kept as one frozen value so the state machine never reaches back into the broker's config
object (the coordinator stays importable and testable without ``broker/``). The defaults are
declared here only: the broker's key table (``broker/config/config_defs.py``) reads them back through
``to_properties``, as it does the log engine's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from wire.primitives import INT32_MAX

_WEEK_MS = 7 * 24 * 60 * 60 * 1000
_MINUTE_MS = 60_000

# Kafka's key of every setting read as a whole number (offsets.retention.minutes aside).
_NUMBER_KEYS = {
    "offsets_topic_partitions": "offsets.topic.num.partitions",
    "offsets_retention_check_interval_ms": "offsets.retention.check.interval.ms",
    "offset_metadata_max_bytes": "offset.metadata.max.bytes",
    "group_initial_rebalance_delay_ms": "group.initial.rebalance.delay.ms",
    "group_min_session_timeout_ms": "group.min.session.timeout.ms",
    "group_max_session_timeout_ms": "group.max.session.timeout.ms",
    "group_max_size": "group.max.size",
    "consumer_session_timeout_ms": "group.consumer.session.timeout.ms",
    "consumer_heartbeat_interval_ms": "group.consumer.heartbeat.interval.ms",
    "consumer_max_size": "group.consumer.max.size",
    "share_session_timeout_ms": "group.share.session.timeout.ms",
    "share_heartbeat_interval_ms": "group.share.heartbeat.interval.ms",
    "share_max_size": "group.share.max.size",
    "streams_session_timeout_ms": "group.streams.session.timeout.ms",
    "streams_heartbeat_interval_ms": "group.streams.heartbeat.interval.ms",
    "streams_max_size": "group.streams.max.size",
    "streams_num_standby_replicas": "group.streams.num.standby.replicas",
    "streams_initial_rebalance_delay_ms": "group.streams.initial.rebalance.delay.ms",
    "streams_assignment_interval_ms": "group.streams.assignment.interval.ms",
}
# ... and of every setting read as a comma-separated list of names.
_NAME_LIST_KEYS = {
    "consumer_assignors": "group.consumer.assignors",
    "rebalance_protocols": "group.coordinator.rebalance.protocols",
}


class ConfigLookup(Protocol):
    """What the coordinator needs from a config: the effective string value of a key."""

    def get(self, key: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """Kafka's group coordinator settings with Kafka's defaults."""

    offsets_topic_partitions: int = 50
    offsets_retention_ms: int = _WEEK_MS
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = INT32_MAX
    # Kafka's classicGroupNewMemberJoinTimeoutMs: a parked JoinGroup of a member that never
    # completed a join cannot heartbeat, so it is given this long before being dropped.
    group_new_member_join_timeout_ms: int = 300_000
    consumer_session_timeout_ms: int = 45_000
    consumer_heartbeat_interval_ms: int = 5000
    consumer_max_size: int = INT32_MAX
    share_session_timeout_ms: int = 45_000
    share_heartbeat_interval_ms: int = 5000
    share_max_size: int = 200
    streams_session_timeout_ms: int = 45_000
    streams_heartbeat_interval_ms: int = 5000
    streams_max_size: int = INT32_MAX
    streams_num_standby_replicas: int = 0
    streams_initial_rebalance_delay_ms: int = 3000
    streams_assignment_interval_ms: int = 1000
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    # "consumer" enables KIP-848 (ConsumerGroupHeartbeat), "streams" KIP-1071
    # (StreamsGroupHeartbeat); Kafka 4.2+ enables classic, consumer and streams.
    rebalance_protocols: tuple[str, ...] = ("classic", "consumer", "streams")

    @classmethod
    def from_config(cls, config: ConfigLookup) -> CoordinatorConfig:
        """Read every setting that ``config`` defines (unset or empty: keep the default)."""
        settings = _numbers(config, _NUMBER_KEYS)
        if minutes := config.get("offsets.retention.minutes"):
            settings["offsets_retention_ms"] = int(minutes) * _MINUTE_MS
        for name, key in _NAME_LIST_KEYS.items():
            if value := config.get(key):
                settings[name] = tuple(v.strip() for v in value.split(",") if v.strip())
        return cls(**settings)

    def to_properties(self) -> dict[str, str]:
        """Kafka key -> value as Kafka prints it, for every setting a key names.

        ``from_config`` read back gives the same settings; the broker's table takes its
        defaults from ``CoordinatorConfig().to_properties()`` so each is written once.
        """
        properties = _rendered_numbers(self, _NUMBER_KEYS)
        properties["offsets.retention.minutes"] = str(self.offsets_retention_ms // _MINUTE_MS)
        for name, key in _NAME_LIST_KEYS.items():
            properties[key] = ",".join(getattr(self, name))
        return properties


def _numbers(config: ConfigLookup, keys: dict[str, str]) -> dict[str, Any]:
    """Every whole-number setting of ``keys`` (field name -> Kafka key) that ``config`` sets."""
    return {name: int(value) for name, key in keys.items() if (value := config.get(key))}


def _rendered_numbers(settings: object, keys: dict[str, str]) -> dict[str, str]:
    """``_numbers`` the other way: Kafka key -> decimal text of each of ``keys``' fields."""
    return {key: str(getattr(settings, name)) for name, key in keys.items()}


_TRANSACTION_KEYS = {
    "state_log_partitions": "transaction.state.log.num.partitions",
    "max_timeout_ms": "transaction.max.timeout.ms",
    "id_expiration_ms": "transactional.id.expiration.ms",
    "remove_expired_interval_ms": "transaction.remove.expired.transaction.cleanup.interval.ms",
}


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    """Kafka's transaction coordinator settings with Kafka's defaults."""

    state_log_partitions: int = 50
    max_timeout_ms: int = 900_000
    id_expiration_ms: int = _WEEK_MS
    remove_expired_interval_ms: int = 3_600_000
    # Kafka retries a marker write that failed (a partition offline) until it succeeds.
    marker_retry_ms: int = 1000

    @classmethod
    def from_config(cls, config: ConfigLookup) -> TransactionConfig:
        """Read every setting that ``config`` defines (unset or empty: keep the default)."""
        return cls(**_numbers(config, _TRANSACTION_KEYS))

    def to_properties(self) -> dict[str, str]:
        """Kafka key -> value of every setting a key names (the broker's table reads the defaults)."""
        return _rendered_numbers(self, _TRANSACTION_KEYS)
