"""A topic's partitions as each broker of a cluster sees them, read with a raw Metadata request
(:mod:`compat_tests.kit.raw_protocol`).

Brokers of a cluster learn a new topic asynchronously: Kafka's CreateTopics is answered once the
controller has committed the topic, and each broker applies it when it replays the metadata log
a moment later (an Odradek broker, when its etcd watch delivers it). A client that asks another
broker in between gets UNKNOWN_TOPIC_OR_PARTITION. Kafka's own integration tests wait for every
broker to know a topic they created (TestUtils.waitForAllPartitionsMetadata); so does this suite.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from compat_tests.helpers import eventually
from compat_tests.kit.raw_protocol import ask, metadata_broker_count
from wire.api_keys import ApiKey

METADATA_TIMEOUT_S = 5.0
PROPAGATION_TIMEOUT_S = 60.0
"""How long a created topic may take to reach every broker (a loaded 2-core machine)."""


@dataclass(frozen=True)
class PartitionState:
    """One partition as Metadata reports it."""

    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def topic_partitions(address: str, topic: str) -> dict[int, PartitionState]:
    """Metadata v1 for ``topic`` from the broker at ``address``: each partition's leader,
    replicas and ISR as that broker sees them (empty if it does not know the topic)."""
    response = ask(address, ApiKey.METADATA, 1, {"topics": [{"name": topic}]}, METADATA_TIMEOUT_S)
    return {
        partition["partition_index"]: PartitionState(
            partition["leader_id"], tuple(partition["replica_nodes"]), tuple(partition["isr_nodes"])
        )
        for found in response["topics"]
        if found["name"] == topic and found["error_code"] == 0
        for partition in found["partitions"]
    }


def _on_every_broker(addresses: Sequence[str], check: Callable[[str], None]) -> None:
    """Run ``check`` on each address until all pass (an unreachable broker counts as not yet)."""

    def everywhere() -> None:
        for address in addresses:
            try:
                check(address)
            except OSError as exc:
                raise AssertionError(f"{address}: {exc}") from exc

    eventually(everywhere, timeout_s=PROPAGATION_TIMEOUT_S, interval_s=0.2)


def wait_until_every_broker_knows(addresses: Sequence[str], topic: str, partitions: int) -> None:
    """Return once each broker at ``addresses`` lists all ``partitions`` of ``topic`` with a leader."""

    def knows(address: str) -> None:
        found = topic_partitions(address, topic)
        led = sorted(index for index, state in found.items() if state.leader >= 0)
        assert led == list(range(partitions)), f"{address} knows partitions {led} of {topic}"

    _on_every_broker(addresses, knows)


def wait_until_every_broker_lists(addresses: Sequence[str], brokers: int) -> None:
    """Return once Metadata from each broker at ``addresses`` lists ``brokers`` brokers.

    A restarted broker answers Metadata as soon as it listens, a moment before the cluster (the
    controller placing new replicas) counts it as registered: a CreateTopics with replication
    factor 3 in between is refused with INVALID_REPLICATION_FACTOR."""

    def lists_all(address: str) -> None:
        host, port = address.rsplit(":", 1)
        listed = metadata_broker_count(host, int(port), METADATA_TIMEOUT_S)
        assert listed == brokers, f"{address} lists {listed} of {brokers} brokers"

    _on_every_broker(addresses, lists_all)
