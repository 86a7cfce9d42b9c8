"""The group coordinator's settings, read from the broker config under Kafka's key names.

Kept as one frozen value so the state machine never reaches back into the broker's config
object (the coordinator stays importable and testable without ``broker/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

INT_MAX = 2**31 - 1


class ConfigLookup(Protocol):
    """What the coordinator needs from a config: the effective string value of a key."""

    def get(self, key: str) -> str | None: ...


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """Kafka's group coordinator settings with Kafka's defaults."""

    offsets_topic_partitions: int = 50
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = INT_MAX
    # Kafka's classicGroupNewMemberJoinTimeoutMs: a parked JoinGroup of a member that never
    # completed a join cannot heartbeat, so it is given this long before being dropped.
    group_new_member_join_timeout_ms: int = 300_000
    consumer_session_timeout_ms: int = 45_000
    consumer_heartbeat_interval_ms: int = 5000
    consumer_max_size: int = INT_MAX
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    # "consumer" enables KIP-848 (ConsumerGroupHeartbeat); Kafka 4 enables both.
    rebalance_protocols: tuple[str, ...] = ("classic", "consumer")

    @classmethod
    def from_config(cls, config: ConfigLookup) -> CoordinatorConfig:
        """Read every setting that ``config`` defines, keeping the default for the rest."""
        defaults = cls()

        def number(key: str, default: int, factor: int = 1) -> int:
            value = config.get(key)
            return default if value is None or value == "" else int(value) * factor

        def names(key: str, default: tuple[str, ...]) -> tuple[str, ...]:
            value = config.get(key)
            return tuple(v.strip() for v in value.split(",") if v.strip()) if value else default

        return cls(
            offsets_topic_partitions=number(
                "offsets.topic.num.partitions", defaults.offsets_topic_partitions
            ),
            offsets_retention_ms=number(
                "offsets.retention.minutes", defaults.offsets_retention_ms // 60_000, factor=60_000
            ),
            offsets_retention_check_interval_ms=number(
                "offsets.retention.check.interval.ms", defaults.offsets_retention_check_interval_ms
            ),
            offset_metadata_max_bytes=number("offset.metadata.max.bytes", defaults.offset_metadata_max_bytes),
            group_initial_rebalance_delay_ms=number(
                "group.initial.rebalance.delay.ms", defaults.group_initial_rebalance_delay_ms
            ),
            group_min_session_timeout_ms=number(
                "group.min.session.timeout.ms", defaults.group_min_session_timeout_ms
            ),
            group_max_session_timeout_ms=number(
                "group.max.session.timeout.ms", defaults.group_max_session_timeout_ms
            ),
            group_max_size=number("group.max.size", defaults.group_max_size),
            consumer_session_timeout_ms=number(
                "group.consumer.session.timeout.ms", defaults.consumer_session_timeout_ms
            ),
            consumer_heartbeat_interval_ms=number(
                "group.consumer.heartbeat.interval.ms", defaults.consumer_heartbeat_interval_ms
            ),
            consumer_max_size=number("group.consumer.max.size", defaults.consumer_max_size),
            consumer_assignors=names("group.consumer.assignors", defaults.consumer_assignors),
            rebalance_protocols=names("group.coordinator.rebalance.protocols", defaults.rebalance_protocols),
        )
