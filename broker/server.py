"""The broker: its shared state (:class:`Broker`) and the trio server that exposes it.

``Broker`` owns everything requests act on — config, topic registry, partition logs,
producer ids, append notifications, the group coordinator, the request memory budget — so handlers receive it through
their context instead of reaching for globals.  ``serve`` binds the listeners, accepts
connections (:mod:`broker.accept`: limits, back-off when descriptors run out) and runs one
task per connection inside a nursery, so shutdown cancels them all cleanly.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import trio

from broker.accept import ConnectionLimits, accept_loop, default_max_connections
from broker.acl_store import AclStore, open_acl_store
from broker.api_support import ApiSupport, Served, supported_apis
from broker.appends import AppendNotifier
from broker.authorizer import Authorizer
from broker.config import BrokerConfig, Listener
from broker.connection import serve_connection
from broker.dispatch import load_handlers
from broker.durability import Durability
from broker.group_timers import install_group_coordinator
from broker.log_maintenance import run_log_maintenance
from broker.memory_budget import MemoryBudget
from broker.partitions import PartitionStore
from broker.peer_watch import PeerWatch
from broker.producer_ids import ProducerIdAllocator
from broker.topics import TopicRegistry
from broker.txn_coordinator import install_transaction_coordinator
from coordinator.coordinator import GroupCoordinator
from coordinator.transactions import TransactionCoordinator
from log.checkpoint import write_atomically
from log.clock import Clock, wall_clock_ms
from wire.api_keys import ApiKey

log = logging.getLogger(__name__)


def _load_cluster_id(directory: Path, node_id: int, configured: str | None) -> str:
    """Read or create ``meta.properties`` (Kafka's per-log-dir identity file)."""
    path = directory / "meta.properties"
    if path.exists():
        values = dict(
            line.split("=", 1)
            for line in path.read_text().splitlines()
            if "=" in line and not line.startswith("#")
        )
        existing = values.get("cluster.id")
        if configured and existing and configured != existing:
            raise SystemExit(
                f"{path} belongs to cluster {existing}, but cluster.id={configured} was configured; "
                "point log.dirs at an empty directory or drop the cluster.id setting"
            )
        if existing:
            return existing
    cluster_id = configured or base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    directory_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    write_atomically(
        str(path),
        f"version=1\nnode.id={node_id}\ncluster.id={cluster_id}\ndirectory.id={directory_id}\n".encode(),
    )
    return cluster_id


class Broker:
    """Shared state of one broker node."""

    def __init__(self, config: BrokerConfig, clock: Clock = wall_clock_ms) -> None:
        self.config = config
        self.clock = clock  # every wall-clock reading of the broker and its logs (``log.clock``)
        self.node_id = config.node_id
        dirs = [Path(d) for d in config.log_dirs]
        for directory in dirs:
            directory.mkdir(parents=True, exist_ok=True)
        self.data_dir = dirs[0]
        self.cluster_id = _load_cluster_id(self.data_dir, self.node_id, config.get("cluster.id"))
        self.topics = TopicRegistry(self.data_dir)
        self.acls: AclStore | None = open_acl_store(config, self.data_dir)
        self.authorizer: Authorizer | None = self.acls.authorizer if self.acls else None
        self.partitions = PartitionStore(self, [str(d) for d in dirs])
        self.producer_ids = ProducerIdAllocator(self.data_dir)
        self.appends = AppendNotifier()
        self.durability = Durability(self)
        self.served: dict[ApiKey, Served] = load_handlers()
        self.supported: dict[ApiKey, ApiSupport] = supported_apis(self.served)
        self.listeners: list[Listener] = []
        self.coordinator: GroupCoordinator | None = None
        self.transactions: TransactionCoordinator | None = None
        queued_bytes = config.get_int("queued.max.request.bytes")
        self.request_memory = MemoryBudget(queued_bytes if queued_bytes > 0 else None)
        self.peer_watch = PeerWatch()
        # Long-running duties started with the listeners and cancelled with them
        # (flush.ms enforcement; the coordinator and retention add theirs).
        self.background_tasks: list[Callable[[], Awaitable[None]]] = [
            self.durability.run_periodic_flush,
            self.durability.run_unawaited_rounds,
            partial(run_log_maintenance, self),
            self.peer_watch.run,
        ]
        install_group_coordinator(self)
        install_transaction_coordinator(self)

    @property
    def endpoint(self) -> Listener:
        """The address clients are told to use for this node (first advertised listener)."""
        advertised = self.config.advertised_listeners[0]
        if advertised.port == 0 and self.listeners:
            return Listener(advertised.name, advertised.host, self.listeners[0].port)
        return advertised

    def close(self) -> None:
        """Flush and close every partition log (a clean shutdown skips recovery next start)."""
        self.partitions.close()


def connection_limits(config: BrokerConfig) -> ConnectionLimits:
    """``max.connections`` (derived from the descriptor limit when -1) and the per-address cap."""
    max_connections = config.get_int("max.connections")
    if max_connections < 0:
        max_connections = default_max_connections(config.get_int("log.open.files.max"))
    return ConnectionLimits(max_connections, config.get_int("max.connections.per.ip"))


async def serve(
    broker: Broker, *, task_status: trio.TaskStatus[list[Listener]] = trio.TASK_STATUS_IGNORED
) -> None:
    """Accept connections on every configured listener until cancelled."""
    limits = connection_limits(broker.config)
    async with trio.open_nursery() as nursery:
        sockets = []
        for listener in broker.config.listeners:
            sock = trio.socket.socket(
                trio.socket.AF_INET6 if ":" in listener.host else trio.socket.AF_INET, trio.socket.SOCK_STREAM
            )
            sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_REUSEADDR, 1)
            await sock.bind((listener.host or "0.0.0.0", listener.port))
            sock.listen(1024)
            bound_port = sock.getsockname()[1]
            broker.listeners.append(Listener(listener.name, listener.host, bound_port))
            sockets.append(sock)
        log.info("accepting up to %d connections (max.connections)", limits.max_connections)
        for sock in sockets:
            nursery.start_soon(accept_loop, sock, limits, nursery, partial(serve_connection, broker))
        for task in broker.background_tasks:
            nursery.start_soon(task)
        task_status.started(list(broker.listeners))
