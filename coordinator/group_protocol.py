"""What the classic and the consumer (KIP-848) protocols share: the coordinator's groups.

Both run over one dictionary of groups, since a group id names one group of one kind whichever
protocol created it, with the coordinator's timer, clock and config. Each protocol sees only the
groups of its own kind; a group of the other kind is, to it, a group that does not exist (the
handlers then answer as Kafka does for a group of the wrong type).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from coordinator.config import CoordinatorConfig
from coordinator.timer import Timer
from log.clock import Clock

G = TypeVar("G")


@dataclass(eq=False)
class GroupProtocol(Generic[G]):
    """One group protocol over the coordinator's groups (``_groups`` is shared, not copied).

    A subclass adds the fields its protocol needs besides these and sets :attr:`kind`.
    """

    kind: ClassVar[type[Any]]
    """The class of the groups this protocol runs."""
    _groups: dict[str, Any]
    _timer: Timer
    _clock: Clock
    _config: CoordinatorConfig

    def group(self, group_id: str) -> G | None:
        """The group ``group_id`` if it exists and is of this protocol's kind (exactly: a streams
        group is a consumer group underneath, yet not one to the consumer protocol)."""
        group = self._groups.get(group_id)
        return group if type(group) is self.kind else None
