"""The console's connections to the cluster: the bootstrap broker and each broker it must reach.

Kafka answers ListOffsets, Fetch, DeleteRecords and DescribeLogDirs only on the broker that
holds the partition (or the log directory), group requests only on the group's coordinator, and
ListGroups per broker; so the console keeps one :class:`KafkaConnection` per broker, found
through Metadata, as a client does.  The connections are blocking and not thread-safe, and
page requests and the sampler share them, so every use holds one lock: the console's load on
the broker is one request at a time, never a burst.  Every socket operation has a timeout, and
any failure closes every connection, so the next page starts afresh (a broker restarted in
the meantime is simply reached again).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from broker.cli.web.errors import require
from broker.client.admin_client import BrokerUnreachable, KafkaConnection
from broker.client.routed import RoutedConnection
from broker.client.security import PLAINTEXT, ClientSecurity
from wire.api_keys import ApiKey

T = TypeVar("T")
CLIENT_ID = "odradek-console"
MAX_COORDINATORS = 10_000


class RequestCount:
    """How many requests the console has sent since it started: its cost to the cluster."""

    def __init__(self) -> None:
        self.total = 0
        self.started = time.monotonic()

    def per_minute(self) -> float:
        """The average since start; in the first minute, what was sent so far (not extrapolated)."""
        minutes = max(time.monotonic() - self.started, 60.0) / 60
        return self.total / minutes


class CountedConnection(RoutedConnection):
    """A connection that counts what it sends (and routes the partition and group requests of
    the commands' code it reuses, such as an offset reset, as they do: ``broker.client.routed``)."""

    def __init__(
        self, address: str, timeout_s: float, count: RequestCount, security: ClientSecurity = PLAINTEXT
    ) -> None:
        self._count = count  # before connecting: SASL's requests count too
        super().__init__(address, timeout_s, CLIENT_ID, security)

    def send_request(self, api_key: int, version: int, body: dict[str, Any]) -> int:
        self._count.total += 1
        return super().send_request(api_key, version, body)


class Session:
    """The connections while the lock is held: the bootstrap broker's, a node's, API versions."""

    def __init__(self, links: BrokerLinks) -> None:
        self._links = links

    def any(self) -> KafkaConnection:
        """The bootstrap broker: for what any broker answers (Metadata, configs, ACLs)."""
        return self._links.connection(self._links.bootstrap)

    def node(self, node_id: int) -> KafkaConnection:
        """The broker ``node_id`` (learnt from the last Metadata); the bootstrap one if unknown."""
        address = self._links.nodes.get(node_id, self._links.bootstrap)
        return self._links.connection(address)

    def metadata(self, topics: list[str] | None = None) -> dict[str, Any]:
        """Metadata, remembering every broker's address for :meth:`node`."""
        answer = self.any().metadata(topics)
        self._links.nodes = {b["node_id"]: f"{b['host']}:{b['port']}" for b in answer["brokers"]}
        return answer

    def coordinator(self, group: str) -> KafkaConnection:
        """The broker coordinating ``group`` (FindCoordinator), where group requests must go."""
        known = self._links.coordinators
        if group not in known:
            if self.version(ApiKey.FIND_COORDINATOR, 4, 4) is None:
                return self.any()
            body = {"key_type": 0, "coordinator_keys": [group]}
            (found,) = self.any().request(ApiKey.FIND_COORDINATOR, 4, body)["coordinators"]
            require(found, f"finding the coordinator of group {group}", f"DESCRIBE on GROUP {group}")
            if len(known) >= MAX_COORDINATORS:
                known.clear()
            known[group] = f"{found['host']}:{found['port']}"
        return self._links.connection(known[group])

    def versions(self) -> dict[int, tuple[int, int]]:
        """(lowest, highest) version per API the bootstrap broker serves (asked once)."""
        if self._links.api_versions is None:
            self._links.api_versions = {
                a["api_key"]: (a["min_version"], a["max_version"]) for a in self.api_versions()["api_keys"]
            }
        return self._links.api_versions

    def api_versions(self) -> dict[str, Any]:
        body = {"client_software_name": CLIENT_ID, "client_software_version": "1"}
        return self.any().request(ApiKey.API_VERSIONS, 3, body)

    def version(self, api_key: int, lowest: int, highest: int) -> int | None:
        """The newest version in [lowest, highest] the broker serves, or None: the API is not there."""
        served = self.versions().get(api_key)
        if served is None or served[1] < lowest or served[0] > highest:
            return None
        return min(served[1], highest)


class BrokerLinks:
    """Every connection the console holds, used one caller at a time through :meth:`run`."""

    def __init__(self, bootstrap: str, timeout_s: float, security: ClientSecurity = PLAINTEXT) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.security = security
        self.count = RequestCount()
        self.nodes: dict[int, str] = {}
        self.api_versions: dict[int, tuple[int, int]] | None = None
        self.coordinators: dict[str, str] = {}
        """Each group's coordinator address, forgotten whenever anything fails (it may have moved)."""
        self._connections: dict[str, KafkaConnection] = {}
        self._lock = threading.Lock()

    def connection(self, address: str) -> KafkaConnection:
        if address not in self._connections:
            self._connections[address] = CountedConnection(address, self.timeout_s, self.count, self.security)
        return self._connections[address]

    def run(self, work: Callable[[Session], T]) -> T:
        """``work`` with the connections; a network failure closes them all and names the address."""
        with self._lock:
            try:
                return work(Session(self))
            except BrokerUnreachable:
                self._close_all()
                raise
            except (OSError, ConnectionError) as exc:
                self._close_all()
                raise BrokerUnreachable(
                    f"the broker at {self.bootstrap} (or one it named in Metadata) stopped answering "
                    f"({exc or type(exc).__name__}); check that it is running and reachable from this "
                    "machine, then reload the page."
                ) from exc
            except Exception:
                self.coordinators.clear()
                raise

    def _close_all(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()
        self.coordinators.clear()
        self.api_versions = None

    def close(self) -> None:
        with self._lock:
            self._close_all()
