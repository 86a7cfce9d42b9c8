"""What the group and the transaction coordinator share: state spread over the partitions of an
internal topic, loaded partition by partition, and timers driven from outside.

Both answer for a key (a group id, a transactional id) only once the partition holding it is
loaded: before the first partition, COORDINATOR_NOT_AVAILABLE; while its own partition is still
being replayed, COORDINATOR_LOAD_IN_PROGRESS.  Clients retry both.  The broker drives time
through :meth:`next_deadline` / :meth:`on_time` and hears about earlier deadlines through
:meth:`set_wakeup` (see ``broker.services.coordinators.group_timers.drive_timers``).
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
        # None: every partition is this node's (a single broker).  In a cluster, the partitions
        # whose internal-topic partition this broker leads (``claim``/``release``).
        self._owned: set[int] | None = None

    def own_claimed_partitions_only(self) -> None:
        """Serve only claimed partitions: a cluster member coordinates the keys of the internal
        topic partitions it leads, and answers NOT_COORDINATOR for the rest."""
        self._owned = set()

    def claim(self, partition: int) -> None:
        """This broker now leads ``partition``: load it and serve its keys."""
        if self._owned is not None and partition not in self._owned:
            self._owned.add(partition)
            self.load_partition(partition)

    def release(self, partition: int) -> None:
        """This broker no longer leads ``partition``: forget its keys and their timers (the new
        leader replays them from the log)."""
        if self._owned is None or partition not in self._owned:
            return
        self._owned.discard(partition)
        self._loaded.discard(partition)
        self._timer.cancel_where(
            lambda key: (
                isinstance(key, tuple)
                and len(key) > 1
                and isinstance(key[1], str)
                and self.partition_for(key[1]) == partition
            )
        )
        self.forget_partition(partition)

    @abstractmethod
    def forget_partition(self, partition: int) -> None:
        """Drop the state of every key of ``partition`` (see ``release``)."""

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
        if self._owned is not None:
            return self._owned <= self._loaded
        return len(self._loaded) >= self.partitions

    def availability(self, key: str) -> ErrorCode:
        """Whether this coordinator can serve ``key`` right now."""
        if self._owned is not None and self.partition_for(key) not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        if not self._started:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.partition_for(key) not in self._loaded:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def listing_error(self) -> ErrorCode:
        """Whether this coordinator can list everything it coordinates (ListGroups,
        ListTransactions) right now.

        A cluster member that leads none of the internal topic's partitions (or whose internal
        topic does not exist yet) lists nothing, with no error, as a Kafka broker does: its
        coordinator is active from start-up on. Answering COORDINATOR_NOT_AVAILABLE there would
        make Kafka's admin client retry that broker until its call times out."""
        if self._owned is None and not self._started:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not self.fully_loaded:
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
