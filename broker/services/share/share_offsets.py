"""Where a share group stands on its partitions, and resetting or deleting that: what the
share-group offset APIs (Describe/Alter/DeleteShareGroupOffsets) and DeleteGroups ask.

A share group's progress is its share-partitions' start offsets, kept by the share
coordinators. Changing one starts the share-partition again under a higher *state epoch*
(Kafka's InitializeShareGroupState): the partition leader's in-memory state is then fenced
(FENCED_STATE_EPOCH on its next write) and reloaded from the new state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.share.state_coordinator import ShareKey, ShareSummary

if TYPE_CHECKING:
    from broker.services.share.share_partitions import SharePartitions
    from broker.services.share.state_router import ShareStateRouter
    from broker.state.topic_registry import TopicRegistry


class ShareOffsets:
    """The share-group offset operations over the share coordinators and this broker's share-partitions."""

    def __init__(self, router: ShareStateRouter, partitions: SharePartitions) -> None:
        self._router = router
        self._partitions = partitions

    async def keys_with_state(self, group_id: str, topics: TopicRegistry) -> list[ShareKey]:
        """The share-partitions of ``group_id`` with state: on a single node what its share
        coordinator holds; in a cluster, asked of every share coordinator for ``partitions``
        (every topic's, as the group's initialized partitions are not recorded elsewhere)."""
        local = [key for key, _state in self._router.coordinator.states() if key[0] == group_id]
        if not self._router.clustered:
            return local
        partitions = [(t.topic_id, i) for t in topics.all() if not t.internal for i in range(t.partitions)]
        return sorted(set(local) | set(await self._router.with_state(group_id, partitions)))

    def groups_with_state(self) -> set[str]:
        """Every group this broker's share coordinator holds state for."""
        return {key[0] for key, _state in self._router.coordinator.states()}

    async def summary(self, key: ShareKey) -> ShareSummary | None:
        return await self._router.summary(key)

    async def start_at(self, key: ShareKey, topic: str, start_offset: int) -> None:
        """Start the share-partition again at ``start_offset`` (AlterShareGroupOffsets)."""
        current = await self._router.summary(key)
        state_epoch = current.state_epoch + 1 if current is not None else 0
        await self._router.initialize(key, state_epoch, start_offset)
        self._partitions.forget(group_id=key[0], topic=topic)

    async def delete(self, key: ShareKey, topic: str) -> None:
        """Forget the share-partition's state (DeleteShareGroupOffsets, DeleteGroups)."""
        try:
            await self._router.delete(key)
        finally:
            self._partitions.forget(group_id=key[0], topic=topic)
