"""Partition replication between Odradek brokers, the way Kafka's ReplicaManager does it.

The cluster layer (``broker.services.cluster``) decides who leads and who follows each partition and
tells :class:`~broker.services.replication.manager.ReplicaManager` so; this package does the rest:
the leader tracks its followers' log ends, moves the high watermark and proposes ISR changes
(``leader_state``, ``isr_policy``), producers with ``acks=all`` wait for the high watermark
(``manager``), and followers fetch from their leaders over the Kafka protocol (``fetcher``,
``peer_connection``). A single node has no ``ReplicaManager`` at all (``broker.replicas`` is
None), so none of this costs it anything.
"""
