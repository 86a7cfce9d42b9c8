"""Odradek clusters for tests: brokers as ``odradek serve`` processes sharing one etcd.

Each broker keeps its port and data directory across kill -9 and restart, so clients reconnect
to the same addresses and the broker must recover and rejoin.  Every cluster gets its own etcd
key prefix, so the clusters of several tests can share one etcd.  Timeouts are shortened
(session 3 s, replica lag 5 s) so failovers happen within seconds.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from confluent_kafka.admin import AdminClient

from compat_tests.kit.broker_process import OdradekProcess

T = TypeVar("T")

FAST_FAILOVER = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "5000",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "6",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
}


def wait_for(condition: Callable[[], T | None], timeout: float = 60.0, what: str = "condition") -> T:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = condition()
        except Exception as exc:  # a broker restarting refuses connections meanwhile
            result, last = None, exc
        else:
            last = None
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f" (last error: {last})" if last else ""))
        time.sleep(0.2)


class OdradekCluster:
    """``size`` brokers (node ids 1..size) on the etcd at ``etcd_endpoints``."""

    def __init__(
        self,
        workdir: Path,
        etcd_endpoints: list[str],
        size: int = 3,
        overrides: Mapping[str, str] | None = None,
    ) -> None:
        hosts = ",".join(endpoint.removeprefix("http://") for endpoint in etcd_endpoints)
        common = {
            "cluster.etcd.endpoints": f"etcd://{hosts}",
            "cluster.etcd.prefix": f"/odradek-test-{uuid.uuid4().hex[:12]}",
            **FAST_FAILOVER,
            **(overrides or {}),
        }
        self.brokers = {
            node: OdradekProcess(workdir / f"broker-{node}", {"node.id": str(node), **common})
            for node in range(1, size + 1)
        }

    @property
    def bootstrap(self) -> str:
        return ",".join(broker.bootstrap for broker in self.brokers.values())

    def start(self) -> OdradekCluster:
        for broker in self.brokers.values():
            broker.start()
        self.wait_all_registered()
        return self

    def wait_all_registered(self) -> None:
        """Wait until Metadata lists every broker. A restarted broker answers a moment before
        the cluster counts it registered, and a topic with three replicas created in between
        is refused with INVALID_REPLICATION_FACTOR."""
        wait_for(lambda: len(self.live_brokers()) == len(self.brokers), what="every broker registered")

    def stop(self) -> None:
        for broker in self.brokers.values():
            if broker.is_running:
                broker.stop()

    def __enter__(self) -> OdradekCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def kill(self, node: int) -> None:
        self.brokers[node].kill()

    def restart(self, node: int) -> None:
        self.brokers[node].start()

    def restart_stopped(self) -> None:
        """Start every broker that is down again and wait until all are registered."""
        for node, broker in self.brokers.items():
            if not broker.is_running:
                self.restart(node)
        self.wait_all_registered()

    def pause(self, node: int) -> None:
        self.brokers[node].process.send_signal(signal.SIGSTOP)

    def resume(self, node: int) -> None:
        self.brokers[node].process.send_signal(signal.SIGCONT)

    def admin(self, node: int | None = None) -> AdminClient:
        """An admin client of one broker (or the whole cluster)."""
        bootstrap = self.brokers[node].bootstrap if node is not None else self.bootstrap
        return AdminClient({"bootstrap.servers": bootstrap})

    def metadata(self, node: int | None = None):
        return self.admin(node).list_topics(timeout=10)

    def live_brokers(self, node: int | None = None) -> set[int]:
        return set(self.metadata(node).brokers)

    def partition(self, topic: str, partition: int, node: int | None = None):
        """The partition's metadata (leader, replicas, isrs) as ``node`` answers it."""
        return self.metadata(node).topics[topic].partitions[partition]

    def leader_of(self, topic: str, partition: int) -> int:
        return self.partition(topic, partition).leader
