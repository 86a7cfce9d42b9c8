"""What the group and the transaction coordinator share: state spread over the partitions of an
internal topic, loaded partition by partition, and timers driven from outside.

Both answer for a key (a group id, a transactional id) only once the partition holding it is
loaded: before the first partition, COORDINATOR_NOT_AVAILABLE; while its own partition is still
being replayed, COORDINATOR_LOAD_IN_PROGRESS.  Clients retry both.  The broker drives time
through :meth:`next_deadline` / :meth:`on_time` and hears about earlier deadlines through
:meth:`set_wakeup` (see ``broker.group_timers.drive_timers``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING

from coordinator.offsets_topic import partition_for
from coordinator.timer import Timer
from log.clock import Clock
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from coordinator.coordinator import CoordinatorStorage


class PartitionedCoordinator(ABC):
    """Loading state and timers of a coordinator over ``partitions`` topic partitions, whose
    records go through ``storage`` and whose time is ``clock`` (ms)."""

    def __init__(self, partitions: int, storage: CoordinatorStorage, clock: Clock) -> None:
        self.partitions = partitions
        self._storage = storage
        self._clock = clock
        self._timer = Timer()
        self._loaded: set[int] = set()
        self._started = False

    def partition_for(self, key: str) -> int:
        """Kafka's ``abs(key.hashCode()) % partitions``."""
        return partition_for(key, self.partitions)

    @abstractmethod
    def load_partition(self, partition: int) -> None:
        """Replay one partition of the internal topic; its keys are served from then on."""

    def _mark_started(self) -> bool:
        """Note the first load; True when this call started the coordinator."""
        if self._started:
            return False
        self._started = True
        return True

    @property
    def fully_loaded(self) -> bool:
        return len(self._loaded) >= self.partitions

    def availability(self, key: str) -> ErrorCode:
        """Whether this coordinator can serve ``key`` right now."""
        if not self._started:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.partition_for(key) not in self._loaded:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def set_wakeup(self, callback: Callable[[], None] | None) -> None:
        """``callback`` runs whenever a deadline earlier than all others is scheduled."""
        self._timer.on_earlier_deadline = callback

    def next_deadline(self) -> int | None:
        return self._timer.next_deadline()

    def on_time(self, now_ms: int) -> None:
        """Fire every timer due at ``now_ms`` (including ones that firing makes due)."""
        while (callback := self._timer.pop_due(now_ms)) is not None:
            callback()
