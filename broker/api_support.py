"""Which API versions Odradek serves: the single table ApiVersions advertises.

Clients negotiate from these ranges and some infer features from them (see KAFKA-FACTS.md),
so they must be honest: an API is advertised only when a handler for it is installed, and
only with versions whose codecs exist.  ``min_accepted`` is above ``min_version`` where Kafka
4 itself advertises old versions it then refuses (Produce 0-2): old librdkafka builds enable
features only when they see those minimums.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ApiSupport:
    """Advertised range ``min_version..max_version``; requests below ``min_accepted`` are
    answered with ``UNSUPPORTED_VERSION`` by the handler."""

    key: int
    name: str
    min_version: int
    max_version: int
    min_accepted: int


def _support(key: int, name: str, versions: str, min_accepted: int | None = None) -> ApiSupport:
    low, high = (int(v) for v in versions.split("-"))
    return ApiSupport(key, name, low, high, low if min_accepted is None else min_accepted)


SUPPORTED: dict[int, ApiSupport] = {
    s.key: s
    for s in (
        _support(0, "Produce", "0-13", min_accepted=3),
        _support(1, "Fetch", "4-17"),
        _support(2, "ListOffsets", "1-9"),
        _support(3, "Metadata", "0-12"),
        _support(8, "OffsetCommit", "2-9"),
        _support(9, "OffsetFetch", "1-9"),
        _support(10, "FindCoordinator", "0-6"),
        _support(11, "JoinGroup", "0-9"),
        _support(12, "Heartbeat", "0-4"),
        _support(13, "LeaveGroup", "0-5"),
        _support(14, "SyncGroup", "0-5"),
        _support(15, "DescribeGroups", "0-5"),
        _support(16, "ListGroups", "0-5"),
        _support(18, "ApiVersions", "0-4"),
        _support(19, "CreateTopics", "2-7"),
        _support(20, "DeleteTopics", "1-6"),
        _support(21, "DeleteRecords", "0-2"),
        _support(22, "InitProducerId", "0-5"),
        _support(23, "OffsetForLeaderEpoch", "2-4"),
        _support(32, "DescribeConfigs", "1-4"),
        _support(33, "AlterConfigs", "0-2"),
        _support(37, "CreatePartitions", "0-3"),
        _support(42, "DeleteGroups", "0-2"),
        _support(44, "IncrementalAlterConfigs", "0-1"),
        _support(47, "OffsetDelete", "0-0"),
        _support(60, "DescribeCluster", "0-1"),
        _support(68, "ConsumerGroupHeartbeat", "0-1"),
        _support(69, "ConsumerGroupDescribe", "0-1"),
    )
}
