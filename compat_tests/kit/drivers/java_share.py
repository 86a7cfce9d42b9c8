"""Share groups (KIP-932) through kafka-clients 4.x: ``java/ShareClient.java`` in a long-lived JVM.

Only the Java client has a share consumer (librdkafka, kafka-python and aiokafka have none), so
the share-group scenarios drive ``KafkaShareConsumer`` and the share-group admin calls here.
ShareClient serves CompatClient's JSON-lines command loop (:class:`JavaProcess`); each consumer
is a named handle, so a scenario interleaves several members of one group poll by poll, and a
scenario that needs a member to crash runs it in a JVM of its own and kills that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compat_tests.kit.drivers.java import JavaProcess, JvmObject, _unb64, build_share_client

SHARE_CLIENT_VERSION = "4.4.0"
"""The newest kafka-clients: its share consumer has explicit acknowledgement with RENEW (KIP-1222)
and the record_limit acquire mode."""


def share_jvm(log_path: Path, version: str = SHARE_CLIENT_VERSION) -> JavaProcess:
    """A ShareClient JVM, started on its first call."""
    return JavaProcess(version, log_path, "ShareClient", build_share_client)


@dataclass(frozen=True)
class Delivery:
    """A record as a share consumer was given it: which delivery attempt this is included."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    delivery_count: int | None


class ShareConsumer(JvmObject):
    """A ``KafkaShareConsumer`` subscribed to ``topics``, held by name inside the JVM.

    ``explicit`` chooses ``share.acknowledgement.mode=explicit`` (each record acknowledged by
    :meth:`acknowledge`) over ``implicit`` (a poll accepts what the previous one returned). The
    broker acquires at most ``max_records`` records per fetch (``share.acquire.mode=record_limit``).
    """

    def __init__(
        self,
        jvm: JavaProcess,
        bootstrap: str,
        group: str,
        topics: Sequence[str],
        *,
        explicit: bool = False,
        max_records: int = 500,
        client_id: str = "share-compat",
    ) -> None:
        super().__init__(jvm, "share")
        self._call(
            "share_open",
            bootstrap=bootstrap,
            group=group,
            topics=list(topics),
            acknowledgement_mode="explicit" if explicit else "implicit",
            max_records=max_records,
            client_id=client_id,
        )

    def poll(self, timeout_s: float) -> list[Delivery]:
        """One ``poll``: what it returned, in order."""
        records = self._call("share_poll", timeout_ms=int(timeout_s * 1000))
        return [
            Delivery(
                r["topic"],
                r["partition"],
                r["offset"],
                _unb64(r["key"]),
                _unb64(r["value"]),
                r["delivery_count"],
            )
            for r in records
        ]

    def acknowledge(self, deliveries: Iterable[Delivery], kind: str) -> None:
        """``acknowledge(record, AcknowledgeType.<kind>)`` for each (ACCEPT, RELEASE, REJECT, RENEW);
        sent to the broker with the next poll or :meth:`commit`."""
        acknowledgements = [[d.topic, d.partition, d.offset, kind] for d in deliveries]
        self._call("share_acknowledge", acknowledgements=acknowledgements)

    def commit(self) -> dict[tuple[str, int], str | None]:
        """``commitSync``: each partition's outcome, None or ``"ExceptionClass: message"``."""
        return {(t, p): error for t, p, error in self._call("share_commit")}

    def lock_timeout_ms(self) -> int | None:
        """``acquisitionLockTimeoutMs()``: the lock duration the broker last reported."""
        return self._call("share_lock_timeout")

    def close(self) -> None:
        self._call("share_close")


class ShareAdmin:
    """The share-group calls of kafka-clients' ``Admin`` (and group configs) against one broker."""

    def __init__(self, jvm: JavaProcess, bootstrap: str) -> None:
        self._jvm = jvm
        self.bootstrap = bootstrap

    def _call(self, op: str, **args: Any) -> Any:
        return self._jvm.call(op, bootstrap=self.bootstrap, **args)

    def set_group_configs(self, group: str, configs: Mapping[str, str]) -> None:
        """incrementalAlterConfigs SET on the group's GROUP config resource."""
        self._call("set_group_configs", group=group, configs=dict(configs))

    def describe(self, group: str) -> dict[str, Any]:
        """describeShareGroups: ``group_id``, ``state`` (Kafka's name: Stable, Empty, Dead),
        ``coordinator``, ``group_epoch``, ``assignment_epoch`` and ``members`` (``member_id``,
        ``client_id``, ``host``, ``member_epoch``, ``assignment`` as [topic, partition] lists)."""
        return self._call("describe_share_group", group=group)

    def list_groups(self, types: Sequence[str] | None = None) -> list[tuple[str, str | None, str | None]]:
        """listGroups, filtered by type names (``SHARE``, ``CONSUMER``, ``CLASSIC``, ``STREAMS``):
        (group id, type, state)."""
        listed = self._call("list_groups", types=None if types is None else list(types))
        return [(g, t, s) for g, t, s in listed]

    def offsets(self, group: str) -> dict[tuple[str, int], tuple[int, int | None]]:
        """listShareGroupOffsets: each partition's start offset and lag (None when unknown)."""
        return {(t, p): (start, lag) for t, p, start, lag in self._call("share_group_offsets", group=group)}
