"""What the topics page and a topic's page show: partitions, records, size, offsets, configs.

Records are the sum over partitions of latest minus earliest offset (what a consumer from the
beginning would read, less what compaction removed); size is each partition's leader replica on
disk, from DescribeLogDirs (one request per broker), or unknown where the console's principal
may not describe the cluster.  The list is bounded: at most ``MAX_LISTED`` topics are shown
(search narrows it), so a cluster of many thousand topics cannot make a page unbounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker.cli.configs import source_name
from broker.cli.web.errors import require
from broker.cli.web.links import Session
from broker.cli.web.offsets import Partition, leaders, log_offsets
from broker.client.admin_client import EARLIEST, LATEST
from broker.config.config_defs import ConfigSource
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

MAX_LISTED = 1000


@dataclass(frozen=True)
class TopicRow:
    name: str
    partitions: int
    replication: int
    records: int
    size: int | None
    internal: bool
    under_replicated: int


@dataclass(frozen=True)
class TopicList:
    rows: list[TopicRow]
    matching: int
    sizes_known: bool


@dataclass(frozen=True)
class PartitionRow:
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    earliest: int | None
    latest: int | None
    size: int | None

    @property
    def records(self) -> int | None:
        if self.earliest is None or self.latest is None:
            return None
        return self.latest - self.earliest


@dataclass(frozen=True)
class ConfigRow:
    name: str
    value: str
    source: str
    overridden: bool


@dataclass(frozen=True)
class TopicView:
    name: str
    internal: bool
    partitions: list[PartitionRow]
    configs: list[ConfigRow]

    @property
    def records(self) -> int:
        return sum(p.records or 0 for p in self.partitions)


def replica_sizes(s: Session, metadata: dict[str, Any], topics: list[str]) -> dict[Partition, int] | None:
    """The leader replica's size of each partition of ``topics``; None where the broker refuses
    DescribeLogDirs (it needs DESCRIBE on the cluster) or does not serve it."""
    version = s.version(ApiKey.DESCRIBE_LOG_DIRS, 1, 4)
    if version is None or not topics:
        return None
    led = leaders(metadata)
    sizes: dict[Partition, int] = {}
    for broker in metadata["brokers"]:
        node = broker["node_id"]
        mine = sorted(p for p, leader in led.items() if leader == node and p[0] in topics)
        if not mine:
            continue
        wanted: dict[str, list[int]] = {}
        for topic, partition in mine:
            wanted.setdefault(topic, []).append(partition)
        body = {"topics": [{"topic": t, "partitions": ps} for t, ps in wanted.items()]}
        answer = s.node(node).request(ApiKey.DESCRIBE_LOG_DIRS, version, body)
        if answer.get("error_code") == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
            return None
        for log_dir in answer["results"]:
            for topic in log_dir["topics"]:
                for p in topic["partitions"]:
                    if not p["is_future_key"]:
                        sizes[(topic["name"], p["partition_index"])] = p["partition_size"]
    return sizes


def topic_list(s: Session, search: str) -> TopicList:
    metadata = s.metadata()
    wanted = sorted(
        (t for t in metadata["topics"] if search.lower() in t["name"].lower()), key=lambda t: t["name"]
    )
    shown = wanted[:MAX_LISTED]
    names = [t["name"] for t in shown]
    led = {p: leader for p, leader in leaders(metadata).items() if p[0] in set(names)}
    latest = log_offsets(s, led, LATEST)
    earliest = log_offsets(s, led, EARLIEST)
    sizes = replica_sizes(s, metadata, names)
    rows = []
    for topic in shown:
        parts = [(topic["name"], p["partition_index"]) for p in topic["partitions"]]
        records = sum(latest[p] - earliest[p] for p in parts if p in latest and p in earliest)
        size = None if sizes is None else sum(sizes.get(p, 0) for p in parts)
        replication = max((len(p["replica_nodes"]) for p in topic["partitions"]), default=0)
        under = sum(1 for p in topic["partitions"] if len(p["isr_nodes"]) < len(p["replica_nodes"]))
        rows.append(
            TopicRow(topic["name"], len(parts), replication, records, size, topic["is_internal"], under)
        )
    return TopicList(rows, len(wanted), sizes is not None)


def topic_configs(s: Session, name: str) -> list[ConfigRow]:
    described = s.any().describe_configs(name)
    require(
        described, f"describing the configs of {name}", f"DESCRIBE_CONFIGS on TOPIC {name}", f"topic {name}"
    )
    rows = []
    for entry in sorted(described["configs"], key=lambda c: c["name"]):
        value = "(sensitive)" if entry["is_sensitive"] else entry["value"] or ""
        source = entry["config_source"]
        rows.append(
            ConfigRow(entry["name"], value, source_name(source), source == ConfigSource.DYNAMIC_TOPIC_CONFIG)
        )
    return rows


def topic_metadata(s: Session, name: str) -> dict[str, Any]:
    """Metadata of one topic (and the brokers); :class:`Gone` if it does not exist (any more)."""
    metadata = s.metadata([name])
    require(metadata["topics"][0], f"describing topic {name}", f"DESCRIBE on TOPIC {name}", f"topic {name}")
    return metadata


def topic_view(s: Session, name: str) -> TopicView:
    metadata = topic_metadata(s, name)
    (entry,) = metadata["topics"]
    led = leaders(metadata)
    latest = log_offsets(s, led, LATEST)
    earliest = log_offsets(s, led, EARLIEST)
    sizes = replica_sizes(s, metadata, [name]) or {}
    partitions = [
        PartitionRow(
            p["partition_index"],
            p["leader_id"],
            p["replica_nodes"],
            p["isr_nodes"],
            earliest.get((name, p["partition_index"])),
            latest.get((name, p["partition_index"])),
            sizes.get((name, p["partition_index"])),
        )
        for p in sorted(entry["partitions"], key=lambda p: p["partition_index"])
    ]
    return TopicView(name, entry["is_internal"], partitions, topic_configs(s, name))
