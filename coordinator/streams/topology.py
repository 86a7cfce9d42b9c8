"""A Kafka Streams application's topology as a streams group (KIP-1071) holds it, configured
against the topics that exist.

A Streams member sends its topology when it joins: subtopologies, each reading source topics
(and repartition topics other subtopologies write), keeping state in changelog topics, with
copartition groups whose topics must have equal partition counts. The broker, not the client,
works out what that means (Kafka's ``InternalTopicManager.configureTopics``): each
subtopology's number of tasks (the most partitions among its source topics), the partition
count of every internal topic (a changelog has one partition per task; a repartition topic as
many as the subtopologies writing into it have tasks, unless the topology fixes it), and what
is wrong (source topics missing, copartitioned topics of different sizes), which the
heartbeat reports as a status instead of tasks. Internal topics that do not exist yet are the
broker's to create, with the configs the topology gives them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any


class StreamsStatus(IntEnum):
    """``StreamsGroupHeartbeatResponse.Status`` codes (Kafka 4.3)."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5


@dataclass(frozen=True, slots=True)
class InternalTopic:
    name: str
    partitions: int  # 0: not fixed by the topology
    replication_factor: int  # 0: the broker's default
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    state_changelog_topics: tuple[InternalTopic, ...]
    repartition_source_topics: tuple[InternalTopic, ...]
    copartition_groups: tuple[tuple[str, ...], ...]  # topic names (sources and repartition sources)


@dataclass(frozen=True, slots=True)
class StreamsTopology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]

    @classmethod
    def from_request(cls, topology: Mapping[str, Any]) -> StreamsTopology:
        """The topology of a StreamsGroupHeartbeat (copartition groups resolved from indexes)."""
        subtopologies = []
        for sub in topology["subtopologies"]:
            sources = tuple(sub["source_topics"])
            repartition_sources = tuple(_internal(t) for t in sub["repartition_source_topics"])
            groups = []
            for group in sub["copartition_groups"]:
                names = [sources[i] for i in group["source_topics"] if 0 <= i < len(sources)]
                names += [
                    repartition_sources[i].name
                    for i in group["repartition_source_topics"]
                    if 0 <= i < len(repartition_sources)
                ]
                groups.append(tuple(names))
            subtopologies.append(
                Subtopology(
                    sub["subtopology_id"],
                    sources,
                    tuple(sub["repartition_sink_topics"]),
                    tuple(_internal(t) for t in sub["state_changelog_topics"]),
                    repartition_sources,
                    tuple(groups),
                )
            )
        return cls(topology["epoch"], tuple(subtopologies))


def _internal(entry: Mapping[str, Any]) -> InternalTopic:
    return InternalTopic(
        entry["name"],
        max(0, entry.get("partitions", 0)),
        max(0, entry.get("replication_factor", 0)),
        tuple((c["key"], c["value"]) for c in entry.get("topic_configs") or ()),
    )


@dataclass(slots=True)
class ConfiguredTopology:
    """What the topology means against the topics that exist now."""

    tasks: dict[str, int] = field(default_factory=dict)  # subtopology id -> number of tasks
    to_create: list[InternalTopic] = field(default_factory=list)  # internal topics with their partitions
    status: list[tuple[StreamsStatus, str]] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return not self.status


def configure(topology: StreamsTopology, partition_counts: Mapping[str, int]) -> ConfiguredTopology:
    """Tasks per subtopology and the internal topics to create, given ``partition_counts`` of
    the topics that exist; a status instead when the topology cannot run as it stands."""
    configured = ConfiguredTopology()
    missing = sorted(
        {t for s in topology.subtopologies for t in s.source_topics if t not in partition_counts}
    )
    if missing:
        configured.status.append(
            (StreamsStatus.MISSING_SOURCE_TOPICS, f"Source topics {', '.join(missing)} are missing.")
        )
        return configured
    repartition = _repartition_partitions(topology, partition_counts)
    if repartition is None:
        configured.status.append(
            (
                StreamsStatus.INCORRECTLY_PARTITIONED_TOPICS,
                "The repartition topics' sizes cannot be determined.",
            )
        )
        return configured
    counts = {**partition_counts, **repartition}
    for sub in topology.subtopologies:
        for group in sub.copartition_groups:
            sizes = {counts[name] for name in group if name in counts}
            if len(sizes) > 1:
                configured.status.append(
                    (
                        StreamsStatus.INCORRECTLY_PARTITIONED_TOPICS,
                        f"Following topics are not copartitioned: {', '.join(sorted(group))}.",
                    )
                )
                return configured
        inputs = [*sub.source_topics, *(t.name for t in sub.repartition_source_topics)]
        configured.tasks[sub.subtopology_id] = max((counts[name] for name in inputs), default=0)
    for sub in topology.subtopologies:
        for topic in sub.repartition_source_topics:
            configured.to_create.append(_sized(topic, repartition[topic.name]))
        for topic in sub.state_changelog_topics:
            partitions = topic.partitions or configured.tasks[sub.subtopology_id]
            configured.to_create.append(_sized(topic, partitions))
    for topic in configured.to_create:
        existing = partition_counts.get(topic.name)
        if existing is not None and existing != topic.partitions:
            configured.status.append(
                (
                    StreamsStatus.INCORRECTLY_PARTITIONED_TOPICS,
                    f"Internal topic {topic.name} has {existing} partitions, {topic.partitions} are expected.",
                )
            )
    return configured


def _sized(topic: InternalTopic, partitions: int) -> InternalTopic:
    return InternalTopic(topic.name, partitions, topic.replication_factor, topic.configs)


def _repartition_partitions(topology: StreamsTopology, known: Mapping[str, int]) -> dict[str, int] | None:
    """Each repartition topic's partition count: fixed by the topology, else (Kafka's rule) the
    most tasks among the subtopologies writing into it, worked out until nothing changes; then
    copartitioned repartition topics take their group's source topics' size. None when a size
    stays unknown (a cycle with no fixed size)."""
    sizes: dict[str, int] = {}
    for sub in topology.subtopologies:
        for topic in sub.repartition_source_topics:
            if topic.partitions:
                sizes[topic.name] = topic.partitions
    pending = {t.name for s in topology.subtopologies for t in s.repartition_source_topics} - set(sizes)
    while pending:
        progressed = False
        for name in sorted(pending):
            writers = [s for s in topology.subtopologies if name in s.repartition_sink_topics]
            counts = []
            for writer in writers:
                inputs = [*writer.source_topics, *(t.name for t in writer.repartition_source_topics)]
                counts += [known[i] if i in known else sizes.get(i, 0) for i in inputs]
            if counts and all(counts):
                sizes[name] = max(counts)
                pending.discard(name)
                progressed = True
        if not progressed:
            return None
    for sub in topology.subtopologies:
        for group in sub.copartition_groups:
            source_sizes = [known[name] for name in group if name in known]
            if source_sizes:
                for topic in sub.repartition_source_topics:
                    if topic.name in group and not topic.partitions:
                        sizes[topic.name] = max(source_sizes)
    return sizes
