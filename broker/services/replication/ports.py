"""What replication needs from the cluster layer, as a Protocol so either side can be tested
with the other's real code or a tiny stand-in."""

from __future__ import annotations

from typing import Protocol


class ClusterPorts(Protocol):
    """The calls ``ReplicaManager`` makes into the cluster layer."""

    async def propose_isr(
        self, topic: str, partition: int, leader_epoch: int, partition_epoch: int, new_isr: list[int]
    ) -> tuple[bool, int]:
        """Kafka's AlterPartition: store ``new_isr`` if the partition is still at
        ``leader_epoch``/``partition_epoch``; (accepted, the partition epoch now)."""
        ...

    async def hand_over(self, topic: str, partition: int, leader_epoch: int, partition_epoch: int) -> int:
        """This leader's log of the partition went offline (a disk error): if the partition is
        still at ``leader_epoch``/``partition_epoch``, another eligible in-sync replica leads
        and this broker leaves the ISR; the new leader's id, -1 if none can take over."""
        ...

    def in_sync_replicas(self, topic: str, partition: int) -> list[int] | None:
        """The partition's ISR as the cluster's metadata holds it, None if it has no record."""
        ...

    def endpoint_of(self, node_id: int, listener_name: str | None = None) -> tuple[str, int] | None:
        """Where ``node_id`` listens: on ``listener_name`` (the listener a client came in on, for
        KIP-951 leader hints) or, when None, on the inter-broker listener
        (``inter.broker.listener.name``, default the first listener); None when unknown."""
        ...
