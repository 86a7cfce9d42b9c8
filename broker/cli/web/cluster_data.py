"""What the cluster page shows: brokers and their racks, the controller, which APIs and features
the broker serves, the partitions each broker leads and holds, and the partitions in trouble
(under-replicated: fewer in-sync replicas than replicas; offline: no leader).

Metadata and ApiVersions are all it takes, so the page costs two requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from broker.cli.web.links import Session
from wire.api_keys import ApiKey


@dataclass
class BrokerRow:
    node_id: int
    address: str
    rack: str | None
    controller: bool
    leaders: int = 0
    replicas: int = 0


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]


@dataclass(frozen=True)
class Feature:
    name: str
    supported: str
    finalized: str


@dataclass
class ClusterView:
    cluster_id: str | None
    controller_id: int
    brokers: list[BrokerRow]
    topics: int
    partitions: int
    under_replicated: list[PartitionState] = field(default_factory=list)
    offline: list[PartitionState] = field(default_factory=list)
    apis: list[tuple[str, int, int]] = field(default_factory=list)
    features: list[Feature] = field(default_factory=list)


def partition_states(metadata: dict[str, Any]) -> list[PartitionState]:
    return [
        PartitionState(t["name"], p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"])
        for t in metadata["topics"]
        for p in t["partitions"]
    ]


def api_name(key: int) -> str:
    try:
        return ApiKey(key).name
    except ValueError:
        return f"API {key}"


def features(answer: dict[str, Any]) -> list[Feature]:
    finalized = {f["name"]: f for f in answer.get("finalized_features") or []}
    found = []
    for feature in sorted(answer.get("supported_features") or [], key=lambda f: f["name"]):
        level = finalized.get(feature["name"])
        shown = "-" if level is None else str(level["max_version_level"])
        found.append(Feature(feature["name"], f"{feature['min_version']}-{feature['max_version']}", shown))
    return found


def cluster_view(s: Session) -> ClusterView:
    metadata = s.metadata()
    states = partition_states(metadata)
    brokers = {
        b["node_id"]: BrokerRow(
            b["node_id"], f"{b['host']}:{b['port']}", b["rack"], b["node_id"] == metadata["controller_id"]
        )
        for b in metadata["brokers"]
    }
    for state in states:
        if state.leader in brokers:
            brokers[state.leader].leaders += 1
        for replica in state.replicas:
            if replica in brokers:
                brokers[replica].replicas += 1
    versions = s.api_versions()
    return ClusterView(
        cluster_id=metadata["cluster_id"],
        controller_id=metadata["controller_id"],
        brokers=sorted(brokers.values(), key=lambda b: b.node_id),
        topics=len(metadata["topics"]),
        partitions=len(states),
        under_replicated=[p for p in states if p.leader >= 0 and len(p.isr) < len(p.replicas)],
        offline=[p for p in states if p.leader < 0],
        apis=[
            (api_name(a["api_key"]), a["min_version"], a["max_version"])
            for a in sorted(versions["api_keys"], key=lambda a: a["api_key"])
        ],
        features=features(versions),
    )
