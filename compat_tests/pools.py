"""Session-wide pools of brokers and client drivers, shared by the fixtures and the scenarios."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from compat_tests.kit.brokers import RunningBroker, start_broker
from compat_tests.kit.clusters import CLUSTER_KINDS, Cluster, ClusterUnavailable
from compat_tests.kit.drivers.base import Driver
from compat_tests.kit.drivers.catalog import PYTHON_DRIVERS
from compat_tests.kit.drivers.java import JAVA_CLIENT_VERSIONS, JavaDriver, JavaProcess

JAVA_CLIENTS = {f"java-{version}": version for version in JAVA_CLIENT_VERSIONS}
ALL_CLIENTS = [*PYTHON_DRIVERS, *JAVA_CLIENTS]


class BrokerPool:
    """Brokers by configuration: the default one, plus one per distinct set of overrides.

    A scenario that needs a differently configured broker (auto.create.topics.enable=false) gets
    a dedicated one, started on first use and shared by every test asking for the same overrides.
    With ``--nodes 3`` the default broker is a three-broker :class:`Cluster` (also what the
    ``cluster`` fixture gives the failover scenarios); brokers with overrides stay single nodes.
    """

    def __init__(self, config: pytest.Config, tmp: pytest.TempPathFactory) -> None:
        self.kind: str = config.getoption("--broker")
        self.bootstrap: str | None = config.getoption("--bootstrap")
        self.node_count: int = config.getoption("--nodes")
        self.tmp = tmp
        self.brokers: dict[frozenset[tuple[str, str]], RunningBroker] = {}
        self._cluster: Cluster | None = None

    def cluster(self) -> Cluster:
        """The session's cluster, started on first use; skips where none can be started."""
        if self.node_count == 1:
            pytest.skip("needs a cluster: run with --nodes 3")
        if self.bootstrap is not None:
            pytest.skip("needs a cluster the suite starts: drop --bootstrap")
        if self._cluster is None:
            try:
                self._cluster = CLUSTER_KINDS[self.kind](self.tmp.mktemp(f"{self.kind}-cluster"), None)
            except ClusterUnavailable as exc:
                pytest.skip(str(exc))
        return self._cluster

    def get(self, overrides: Mapping[str, str] | None = None) -> RunningBroker:
        key = frozenset((overrides or {}).items())
        if key not in self.brokers:
            if not key and self.node_count > 1 and self.bootstrap is None:
                self.brokers[key] = self.cluster().broker()
            elif self.bootstrap is not None:
                if key:
                    pytest.skip(
                        f"needs a broker with {dict(key)}; drop --bootstrap to let the suite start one"
                    )
                self.brokers[key] = RunningBroker(self.bootstrap, "external")
            else:
                workdir = self.tmp.mktemp(f"{self.kind}-broker")
                self.brokers[key] = start_broker(self.kind, workdir, dict(key))
        return self.brokers[key]

    def stop_all(self) -> None:
        for broker in self.brokers.values():
            broker.stop()
        if self._cluster is not None:
            self._cluster.stop()


class DriverPool:
    """One driver per (client, broker), and one JVM per Java client version for the session."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.jvms: dict[str, JavaProcess] = {}
        self.drivers: dict[tuple[str, str], Driver] = {}

    def get(self, client: str, bootstrap: str) -> Driver:
        key = (client, bootstrap)
        if key not in self.drivers:
            if client in JAVA_CLIENTS:
                version = JAVA_CLIENTS[client]
                jvm = self.jvms.setdefault(version, JavaProcess(version, self.log_dir / f"{client}.log"))
                self.drivers[key] = JavaDriver(bootstrap, jvm)
            else:
                self.drivers[key] = PYTHON_DRIVERS[client](bootstrap)
        return self.drivers[key]

    def close_all(self) -> None:
        for driver in self.drivers.values():
            driver.close()
        for jvm in self.jvms.values():
            jvm.stop()
