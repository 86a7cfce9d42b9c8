"""GROUP config resources (type 32, KIP-848): per-group overrides of the coordinator's timing.

Kafka's ``GroupConfig`` keys a KIP-848 consumer group can override: each defaults to a broker
key and must lie within the broker's min/max pair for it. The coordinator reads the overrides
of a group each time it answers one of its heartbeats (``GroupCoordinator.group_configs``), so a
change applies from the next heartbeat on. Share groups' keys (KIP-932, KIP-1240) are read
the same way by the share-partitions (``broker.services.share``); streams groups are not served,
so their keys are not offered.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.config.config import BrokerConfig
from broker.config.config_defs import ConfigType
from broker.config.dynamic_config import DynamicConfigError, check_type
from coordinator.share.persistence import check_auto_offset_reset
from wire.error_codes import ErrorCode

MAX_CONFIGURED_GROUPS = 10_000
"""Groups that may carry configs at once: every change rewrites the whole file, so its size is
bounded (Odradek-specific; Kafka's bound is its metadata log)."""


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    """A group key, the broker key it defaults to, and the broker keys bounding it."""

    name: str
    broker_default: str
    lowest: str | None  # None: only Kafka's own floor bounds it from below
    highest: str | None  # None: unbounded above (as Kafka's streams.initial.rebalance.delay.ms)
    doc: str
    type: ConfigType = ConfigType.INT
    floor: int = 1
    """The lowest value Kafka's own definition of the key accepts, checked before the broker's bounds."""


GROUP_CONFIGS: dict[str, GroupConfigDef] = {
    d.name: d
    for d in (
        GroupConfigDef(
            "consumer.session.timeout.ms",
            "group.consumer.session.timeout.ms",
            "group.consumer.min.session.timeout.ms",
            "group.consumer.max.session.timeout.ms",
            "A member of this group that sends no heartbeat for this long is removed.",
        ),
        GroupConfigDef(
            "consumer.heartbeat.interval.ms",
            "group.consumer.heartbeat.interval.ms",
            "group.consumer.min.heartbeat.interval.ms",
            "group.consumer.max.heartbeat.interval.ms",
            "How often members of this group are told to heartbeat.",
        ),
        *(
            GroupConfigDef(
                f"share.{name}",
                f"group.share.{name}",
                f"group.share.min.{name}",
                f"group.share.max.{name}",
                doc,
                floor=floor,
            )
            for name, floor, doc in (
                (
                    "session.timeout.ms",
                    1,
                    "A share group member that sends no heartbeat for this long is removed.",
                ),
                ("heartbeat.interval.ms", 1, "How often members of this share group are told to heartbeat."),
                ("record.lock.duration.ms", 1000, "How long a member holds the records it acquired."),
                ("delivery.count.limit", 2, "Deliveries of a record before it is archived."),
                ("partition.max.record.locks", 100, "Records in flight per share-partition."),
            )
        ),
        *(
            GroupConfigDef(
                f"streams.{name}",
                f"group.streams.{name}",
                f"group.streams.min.{name}",
                f"group.streams.max.{name}",
                doc,
                floor=floor,
            )
            for name, floor, doc in (
                (
                    "session.timeout.ms",
                    1,
                    "A streams group member that sends no heartbeat for this long is removed.",
                ),
                (
                    "heartbeat.interval.ms",
                    1,
                    "How often members of this streams group are told to heartbeat.",
                ),
                (
                    "assignment.interval.ms",
                    0,
                    "Least time between two target assignments of this streams group.",
                ),
            )
        ),
        GroupConfigDef(
            "streams.initial.rebalance.delay.ms",
            "group.streams.initial.rebalance.delay.ms",
            None,
            None,
            "How long this streams group, when new, waits for more members before its first assignment.",
            floor=0,
        ),
        GroupConfigDef(
            "streams.num.standby.replicas",
            "group.streams.num.standby.replicas",
            None,
            "group.streams.max.standby.replicas",
            "Standby tasks kept per active task.",
            floor=0,
        ),
    )
}


@dataclass(frozen=True, slots=True)
class GroupChoiceDef:
    """A group key that takes one of a few words, with no broker key behind it (Kafka's default)."""

    name: str
    default: str
    allowed: tuple[str, ...]
    doc: str
    type: ConfigType = ConfigType.STRING


SHARE_CHOICES: dict[str, GroupChoiceDef] = {
    d.name: d
    for d in (
        GroupChoiceDef(
            "share.auto.offset.reset",
            "latest",
            ("latest", "earliest"),
            "Where a share group with no state starts.",
        ),
        GroupChoiceDef(
            "share.isolation.level",
            "read_uncommitted",
            ("read_uncommitted", "read_committed"),
            "Whether the share group reads records of open and aborted transactions.",
        ),
        GroupChoiceDef(
            "share.renew.acknowledge.enable",
            "true",
            ("true", "false"),
            "Whether members may renew their locks.",
            ConfigType.BOOLEAN,
        ),
    )
}
"""The share group keys that take one of a few words."""


def check_group_configs(broker_config: BrokerConfig, updated: dict[str, str]) -> None:
    """Refuse unknown keys and values outside the broker's bounds, as Kafka words it."""
    for key, value in updated.items():
        if key == "share.auto.offset.reset":
            try:
                check_auto_offset_reset(value)
            except ValueError as error:
                raise DynamicConfigError(
                    f"Invalid value {value} for configuration {key}: {error}", ErrorCode.INVALID_CONFIG
                ) from error
            continue
        choice = SHARE_CHOICES.get(key)
        if choice is not None:
            if value.strip().lower() not in choice.allowed:
                raise DynamicConfigError(
                    f"Invalid value {value} for configuration {key}: must be one of {', '.join(choice.allowed)}",
                    ErrorCode.INVALID_CONFIG,
                )
            continue
        definition = GROUP_CONFIGS.get(key)
        if definition is None:
            raise DynamicConfigError(f"Unknown group config name: {key}", ErrorCode.INVALID_CONFIG)
        check_type(key, definition.type, value, ErrorCode.INVALID_CONFIG)
        number = int(value)
        if number < definition.floor:
            raise DynamicConfigError(
                f"Invalid value {value} for configuration {key}: Value must be at least {definition.floor}",
                ErrorCode.INVALID_CONFIG,
            )
        if definition.lowest is not None and number < broker_config.get_int(definition.lowest):
            raise DynamicConfigError(
                f"{key} must be greater than or equal to {definition.lowest}", ErrorCode.INVALID_CONFIG
            )
        if definition.highest is not None and number > broker_config.get_int(definition.highest):
            raise DynamicConfigError(
                f"{key} must be less than or equal to {definition.highest}", ErrorCode.INVALID_CONFIG
            )


def group_overrides(configs: dict[str, str]) -> dict[str, int]:
    """A group's stored configs as the coordinator reads them."""
    return {key: int(value) for key, value in configs.items() if key in GROUP_CONFIGS}
