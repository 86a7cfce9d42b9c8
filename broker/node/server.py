"""The broker: its shared state (:class:`Broker`) and the trio server that exposes it.

``Broker`` owns everything requests act on — config, topic registry, partition logs,
producer ids, append notifications, the group coordinator, the request memory budget — so handlers receive it through
their context instead of reaching for globals.  ``serve`` binds the listeners, accepts
connections (:mod:`broker.network.accept`: limits, back-off when descriptors run out) and runs one
task per connection inside a nursery, so shutdown cancels them all cleanly.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from broker.config.config import BrokerConfig, Listener
from broker.handlers import load_handlers
from broker.network.accept import ConnectionLimits, ConnectionServer, accept_loop, default_max_connections
from broker.network.bind_failure import bind_failure
from broker.network.connection import serve_connection
from broker.network.memory_budget import MemoryBudget
from broker.network.peer_watch import PeerWatch
from broker.node.metrics_http import serve_metrics
from broker.node.metrics_state import BrokerStateCollector
from broker.requests.api_ranges import ApiSupport
from broker.requests.api_support import Served, supported_apis
from broker.requests.request_observer import RequestObserver
from broker.services.coordinators.group_timers import install_group_coordinator
from broker.services.coordinators.share_coordinator import install_share_coordinator
from broker.services.coordinators.txn_coordinator import install_transaction_coordinator
from broker.services.metrics import BrokerMetrics
from broker.services.quotas.quota_manager import ClientQuotas
from broker.services.quotas.quota_rate import Windows
from broker.services.replication.manager import ReplicaManager
from broker.services.replication.ports import ClusterPorts
from broker.services.security.acl_store import ACL_FILE, AclStore, open_acl_store
from broker.services.security.authorizer import Authorizer
from broker.services.security.listener_security import build_listener_security
from broker.services.security.scram_store import ScramCredentialStore
from broker.services.share.share_partitions import SharePartitions
from broker.services.share.share_sessions import ShareSessions
from broker.services.share.state_router import ShareStateRouter
from broker.services.storage.appends import AppendNotifier
from broker.services.storage.durability import Durability
from broker.services.storage.fetch_sessions import FetchSessionCache
from broker.services.storage.log_maintenance import run_log_maintenance
from broker.services.storage.partitions import PartitionStore
from broker.services.telemetry.client_metrics_manager import ClientTelemetry
from broker.services.telemetry.client_software import ClientSoftware
from broker.state.client_metrics_store import SubscriptionStore
from broker.state.documents import DataDirectory, Documents
from broker.state.dynamic_config_store import DynamicConfigStore
from broker.state.producer_id_allocator import ProducerIdAllocator
from broker.state.quota_store import QuotaStore
from broker.state.topic_registry import TopicRegistry
from coordinator.coordinator import GroupCoordinator
from coordinator.offsets_topic import OFFSETS_TOPIC
from coordinator.partitioned import PartitionedCoordinator
from coordinator.share.state_coordinator import SHARE_STATE_TOPIC, ShareCoordinator
from coordinator.transactions import TRANSACTION_STATE_TOPIC, TransactionCoordinator
from log.checkpoint import write_atomically
from log.clock import Clock, wall_clock_ms
from wire.api_keys import ApiKey

if TYPE_CHECKING:
    from broker.services.cluster.node import ClusterNode

log = logging.getLogger(__name__)


def _load_identity(directory: Path, node_id: int, configured: str | None) -> tuple[str, str]:
    """Read or create ``meta.properties`` (Kafka's per-log-dir identity file): the cluster id
    and this log directory's id."""
    path = directory / "meta.properties"
    values: dict[str, str] = {}
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
        if existing and values.get("directory.id"):
            return existing, values["directory.id"]
    cluster_id = values.get("cluster.id") or configured or _random_id()
    directory_id = _random_id()
    write_identity(directory, node_id, cluster_id, directory_id)
    return cluster_id, directory_id


def write_identity(directory: Path, node_id: int, cluster_id: str, directory_id: str) -> None:
    write_atomically(
        str(directory / "meta.properties"),
        f"version=1\nnode.id={node_id}\ncluster.id={cluster_id}\ndirectory.id={directory_id}\n".encode(),
    )


def _random_id() -> str:
    """A Kafka id: URL-safe base64 of a random UUID, unpadded."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class Broker:
    """Shared state of one broker node."""

    def __init__(self, config: BrokerConfig, clock: Clock = wall_clock_ms) -> None:
        self.config = config
        # Per listener name: protocol, TLS context, SASL mechanisms; a ConfigError here stops
        # the start before anything touches the disk.
        self.listener_security = build_listener_security(
            config, lambda user, mechanism: self.scram_credentials.lookup(user, mechanism), clock
        )
        self.clock = clock  # every wall-clock reading of the broker and its logs (``log.clock``)
        self.node_id = config.node_id
        dirs = [Path(d) for d in config.log_dirs]
        for directory in dirs:
            directory.mkdir(parents=True, exist_ok=True)
        self.data_dir = dirs[0]
        self.cluster_id, self.directory_id = _load_identity(
            self.data_dir, self.node_id, config.get("cluster.id")
        )
        self.topics = TopicRegistry(self.data_dir)
        etcd_endpoints = config.get("cluster.etcd.endpoints")
        # A cluster member (docs/CLUSTER.md) or, unset, a single node with no other server.
        self.cluster: ClusterNode | None = None
        if etcd_endpoints:
            # Imported here: the cluster layer and its etcd client (httpx) cost 0.2 s of every
            # start, and a single node needs none of them.
            from broker.services.cluster.node import ClusterNode

            self.cluster = ClusterNode(self, etcd_endpoints)
        # ACLs, credentials, quotas, subscriptions, dynamic configs: files of a single node, or
        # shared by every broker of a cluster through etcd (broker/state/documents.py).
        self.documents: Documents = self.cluster.documents if self.cluster else DataDirectory(self.data_dir)
        # Under ``config`` from here on a single node; a cluster's arrive with its metadata, which
        # ``ClusterNode.start`` loads before the listeners serve.
        self.dynamic_configs = DynamicConfigStore(self.documents.open(DynamicConfigStore.FILE_NAME), config)
        self.acls: AclStore | None = open_acl_store(config, self.documents.open(ACL_FILE))
        self.authorizer: Authorizer | None = self.acls.authorizer if self.acls else None
        self.partitions = PartitionStore(
            config, self.topics, clock, [str(d) for d in dirs], create_missing=self.cluster is None
        )
        self.dynamic_configs.on_change.append(self.partitions.reconfigure_all)  # new log defaults
        self.producer_ids = ProducerIdAllocator(self.data_dir)
        self.scram_credentials: ScramCredentialStore = ScramCredentialStore(
            self.documents.open(ScramCredentialStore.FILE_NAME, mode=ScramCredentialStore.FILE_MODE)
        )
        self.appends = AppendNotifier()
        self.metrics = BrokerMetrics()
        self.fetch_sessions = FetchSessionCache(
            config.get_int("max.incremental.fetch.session.cache.slots"),
            config.get_int("max.incremental.fetch.session.cache.partitions"),
            clock,
        )
        self.durability = Durability(config, self.partitions, self.appends, self.metrics)
        self.client_software = ClientSoftware()
        windows = Windows(
            max(1, config.get_int("quota.window.num")),
            max(1, config.get_int("quota.window.size.seconds")) * 1000,
        )
        self.quotas = ClientQuotas(QuotaStore(self.documents.open(QuotaStore.FILE_NAME)), windows, clock)
        self.client_telemetry = ClientTelemetry(
            SubscriptionStore(self.documents.open(SubscriptionStore.FILE_NAME)),
            config.get_int("telemetry.max.bytes"),
            clock,
        )
        self.served: dict[ApiKey, Served] = load_handlers()
        self.supported: dict[ApiKey, ApiSupport] = supported_apis(self.served)
        self.listeners: list[Listener] = []
        self.coordinator: GroupCoordinator | None = None
        self.transactions: TransactionCoordinator | None = None
        self.share_coordinator: ShareCoordinator | None = None
        self.share: SharePartitions | None = None
        self.share_state: ShareStateRouter | None = None
        self.share_sessions: ShareSessions | None = None
        self.metrics_address: tuple[str, int] | None = None  # bound by ``serve`` (metrics.listener)
        self.metrics_state = BrokerStateCollector(self)
        self.metrics.registry.register(self.metrics_state)
        self.request_observer = RequestObserver(
            self.metrics,
            self.topics,
            config.get_bool("log.requests.enable"),
            config.get_int("log.slow.request.ms"),
        )
        queued_bytes = config.get_int("queued.max.request.bytes")
        self.request_memory = MemoryBudget(
            queued_bytes if queued_bytes > 0 else None, self.metrics.requests.queue_time.observe
        )
        self.peer_watch = PeerWatch()
        # Cluster mode only (``start_replication``): a single node has no replicas to manage.
        self.replicas: ReplicaManager | None = None
        # Long-running duties started with the listeners and cancelled with them
        # (flush.ms enforcement; the coordinator and retention add theirs).
        self.background_tasks: list[Callable[[], Awaitable[None]]] = [
            self.durability.run_periodic_flush,
            self.durability.run_rounds,
            partial(run_log_maintenance, config, clock, self.partitions),
            self.peer_watch.run,
        ]
        install_group_coordinator(self)
        install_transaction_coordinator(self)
        install_share_coordinator(self)
        if self.cluster is not None:
            self.start_replication(self.cluster)
            self.background_tasks.extend(self.cluster.background_tasks)

    def coordinator_over(self, topic: str) -> PartitionedCoordinator | None:
        """The coordinator whose state lives in the internal ``topic`` (in a cluster it serves
        the keys of the partitions of that topic this broker leads), None for other topics."""
        if topic == OFFSETS_TOPIC:
            return self.coordinator
        if topic == TRANSACTION_STATE_TOPIC:
            return self.transactions
        if topic == SHARE_STATE_TOPIC:
            return self.share_coordinator
        return None

    def start_replication(self, ports: ClusterPorts) -> ReplicaManager:
        """Cluster mode: manage replica roles from now on (the cluster layer calls this before
        ``serve`` and drives the returned manager); its fetchers and ISR timer run with the
        listeners."""
        self.replicas = ReplicaManager(
            self.config, self.node_id, self.clock, self.topics, self.partitions, self.appends, ports
        )
        self.background_tasks.append(self.replicas.run)
        return self.replicas

    @property
    def endpoint(self) -> Listener:
        """The address clients are told to use for this node (first advertised listener)."""
        return self.endpoint_for(self.config.advertised_listeners[0].name)

    def endpoint_for(self, listener_name: str) -> Listener:
        """The advertised address of ``listener_name``: Metadata, FindCoordinator and
        DescribeCluster answer a client with the listener it connected to, as Kafka does, so a
        SASL_SSL client is never sent to the PLAINTEXT port."""
        advertised = self.config.advertised_listeners
        chosen = next((a for a in advertised if a.name == listener_name), advertised[0])
        if chosen.port == 0:
            bound = next((b for b in self.listeners if b.name == chosen.name), None)
            if bound is not None:
                return Listener(chosen.name, chosen.host, bound.port)
        return chosen

    def adopt_cluster_id(self, cluster_id: str) -> None:
        """Take the id the cluster's metadata holds (a cluster member joining it); a log
        directory that already holds another cluster's topics is refused."""
        if cluster_id == self.cluster_id:
            return
        if len(self.topics):
            raise SystemExit(
                f"{self.data_dir} holds topics of cluster {self.cluster_id}, but etcd holds cluster "
                f"{cluster_id}; point log.dirs at an empty directory or cluster.etcd.prefix at that cluster"
            )
        self.cluster_id = cluster_id
        write_identity(self.data_dir, self.node_id, cluster_id, self.directory_id)

    def close(self) -> None:
        """Flush and close every partition log (a clean shutdown skips recovery next start)."""
        self.partitions.close()


def connection_limits(config: BrokerConfig) -> ConnectionLimits:
    """``max.connections`` (derived from the descriptor limit when -1) and the per-address cap."""
    max_connections = config.get_int("max.connections")
    if max_connections < 0:
        max_connections = default_max_connections(config.get_int("log.open.files.max"))
    return ConnectionLimits(max_connections, config.get_int("max.connections.per.ip"))


async def start_metrics_endpoint(broker: Broker, nursery: trio.Nursery) -> None:
    """Serve ``GET /metrics`` at ``metrics.listener``, if set."""
    metrics_listener = broker.config.get("metrics.listener")
    if metrics_listener:
        host, port = broker.metrics_address = await nursery.start(
            serve_metrics, metrics_listener, broker.metrics.registry, broker.metrics_state.refresh
        )
        log.info("serving Prometheus metrics at http://%s:%d/metrics", host or "0.0.0.0", port)


async def listening_socket(host: str, port: int, *, shared: bool = False) -> trio.socket.SocketType:
    """A socket listening on ``host:port`` (every interface for an empty host); a port that
    cannot be bound raises ``BindFailure``, which the CLI prints as one line.  A ``shared`` one
    (``shared.listeners``) is bound by every process of the machine at once: the kernel spreads
    the connections over them (SO_REUSEPORT)."""
    sock = trio.socket.socket(
        trio.socket.AF_INET6 if ":" in host else trio.socket.AF_INET, trio.socket.SOCK_STREAM
    )
    sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_REUSEPORT, 1)
    try:
        await sock.bind((host or "0.0.0.0", port))
    except OSError as exc:
        sock.close()
        raise bind_failure("Socket server", host, port, exc, "--listeners") from exc
    sock.listen(1024)
    return sock


async def accept_when_ready(
    broker: Broker,
    sock: trio.socket.SocketType,
    limits: ConnectionLimits,
    nursery: trio.Nursery,
    serve_one: ConnectionServer,
) -> None:
    """Accept on ``sock`` once a cluster member may serve clients (``ClusterNode.ready_to_serve``;
    a single broker at once); until then connections wait in the listen backlog."""
    if broker.cluster is not None:
        await broker.cluster.ready_to_serve()
    await accept_loop(sock, limits, nursery, serve_one, broker.quotas.connection)


async def serve(
    broker: Broker, *, task_status: trio.TaskStatus[list[Listener]] = trio.TASK_STATUS_IGNORED
) -> None:
    """Accept connections on every configured listener until cancelled."""
    limits = connection_limits(broker.config)
    if broker.cluster is not None:
        await broker.cluster.start()
    async with trio.open_nursery() as nursery:
        await start_metrics_endpoint(broker, nursery)
        sockets = []
        for listener in broker.config.listeners:
            sock = await listening_socket(listener.host, listener.port)
            bound_port = sock.getsockname()[1]
            broker.listeners.append(Listener(listener.name, listener.host, bound_port))
            sockets.append((listener.name, sock))
        for listener in broker.config.shared_listeners:
            sockets.append((listener.name, await listening_socket(listener.host, listener.port, shared=True)))
            log.info(
                "bootstrap address %s:%d shared with this machine's other processes",
                listener.host,
                listener.port,
            )
        log.info("accepting up to %d connections (max.connections)", limits.max_connections)
        for listener_name, sock in sockets:
            security = broker.listener_security[listener_name]
            serve_one = broker.metrics.counting(listener_name, partial(serve_connection, broker, security))
            nursery.start_soon(accept_when_ready, broker, sock, limits, nursery, serve_one)
        for task in broker.background_tasks:
            nursery.start_soon(task)
        task_status.started(list(broker.listeners))
