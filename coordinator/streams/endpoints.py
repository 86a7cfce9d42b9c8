"""Endpoint information for interactive queries (KIP-1071's ``partitions_by_user_endpoint``).

A Kafka Streams instance with ``application.server`` set sends that host:port as its user
endpoint; the coordinator tells every member which topic partitions each endpoint serves, so
that ``KafkaStreams.metadataForAllStreamsClients()`` and key lookups can route a query to the
instance holding the state. A task of a subtopology stands for the same-numbered partition of
each of its source topics and repartition source topics. Kafka 4.3 (``EndpointToPartitionsManager``)
maps a member's tasks of a subtopology to every such topic with the task partitions sorted and
cut to the topic's partition count, one entry per subtopology and topic, active and standby tasks
apart, from the tasks the member holds now (not its target).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from coordinator.streams.topology import StreamsTopology

if TYPE_CHECKING:
    from wire.messages import (
        DescribeTransactionsResponseTopics,
        StreamsGroupHeartbeatResponsePartitionsByUserEndpoint,
    )

TaskPartitions = Mapping[str, frozenset[int]]
"""A member's tasks: partitions by subtopology id."""


def endpoint_partitions(
    endpoint: tuple[str, int],
    active: TaskPartitions,
    standby: TaskPartitions,
    topology: StreamsTopology,
    partition_counts: Mapping[str, int],
) -> StreamsGroupHeartbeatResponsePartitionsByUserEndpoint:
    """One member's entry: its endpoint with the partitions of its active and standby tasks."""
    return {
        "user_endpoint": {"host": endpoint[0], "port": endpoint[1]},
        "active_partitions": _partitions(active, topology, partition_counts),
        "standby_partitions": _partitions(standby, topology, partition_counts),
    }


def _partitions(
    tasks: TaskPartitions, topology: StreamsTopology, partition_counts: Mapping[str, int]
) -> list[DescribeTransactionsResponseTopics]:
    inputs = {
        s.subtopology_id: sorted({*s.source_topics, *(t.name for t in s.repartition_source_topics)})
        for s in topology.subtopologies
    }
    entries: list[DescribeTransactionsResponseTopics] = []
    for subtopology_id, partitions in sorted(tasks.items()):
        ordered = sorted(partitions)
        for topic in inputs.get(subtopology_id, ()):
            count = partition_counts.get(topic)
            if count is not None:  # a topic deleted under the group serves nothing
                entries.append({"topic": topic, "partitions": ordered[:count]})
    return entries
