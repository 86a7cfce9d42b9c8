"""Fixtures, options and the matrix report of the compatibility suite.

Run ``pytest compat_tests`` to start an Odradek broker, ``--broker apache-kafka`` to run the same
scenarios against Apache Kafka, or ``--bootstrap HOST:PORT`` to test a broker that is already
running. Every scenario is parametrized over the clients; brokers, Java client JVMs and drivers
live for the whole session, because starting them per test would dominate the run time.
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.chaos import CI_CHAOS_ROUNDS
from compat_tests.helpers import eventually
from compat_tests.kit.brokers import BROKER_KINDS, RunningBroker, kafka_jars, kafka_tools_jars
from compat_tests.kit.clusters import CLUSTER_SIZE, Cluster
from compat_tests.kit.drivers.base import Driver
from compat_tests.kit.drivers.java import JavaProcess, build_java_client, build_share_client
from compat_tests.kit.drivers.java_share import SHARE_CLIENT_VERSION, share_jvm
from compat_tests.kit.drivers.java_streams import build_streams_app
from compat_tests.kit.share_history import CI_RECORDS as CI_SHARE_HISTORY_RECORDS
from compat_tests.matrix import CELL_PROPERTY, Matrix, cell_key
from compat_tests.maven import classpath
from compat_tests.nemesis import FAULTS
from compat_tests.pools import ALL_CLIENTS, JAVA_CLIENTS, BrokerPool, DriverPool

TEST_TIMEOUT_S = 150
"""Per-test deadline (pytest-timeout); client calls are bounded well below it."""
SLOW_TEST_TIMEOUT_S = 300
"""The deadline of a test marked ``slow``: the Kafka tools' scenarios start a JVM per command
(40 to 70 s on a quiet machine), and CI runs this suite beside the others on two cores."""
CLUSTER_TEST_TIMEOUT_S = 600
CHAOS_ROUND_TIMEOUT_S = 300
"""A cluster scenario's deadline: restarts and failovers are slow, and the chaos scenario's
grows with ``--chaos-rounds`` (a round takes about a minute on the 2-core machine)."""
NEMESIS_ROUND_TIMEOUT_S = 300
"""The nemesis scenario's deadline grows with its rounds (``--nemesis-rounds``; by default one
per fault): a round takes 30 to 90 s on the 2-core machine, its history check growing with it."""

SHARE_HISTORY_S_PER_RECORD = 0.1
"""The scripted share-group run's deadline grows with its records (``--share-history-records``)."""

TOOL_MODULES = frozenset({"test_kafka_tools.py", "test_share_groups.py", "test_streams_groups.py"})
"""The modules that run Apache Kafka's command-line tools (their jars are resolved up front)."""
SHARE_MODULES = frozenset({"test_share_groups.py", "test_share_history.py", "test_cluster_share.py"})
"""The modules that drive kafka-clients' share consumer (java/ShareClient.java, compiled up front)."""
MATRIX_KEY = pytest.StashKey[Matrix]()
SUITE_DIR = Path(__file__).resolve().parent


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("compat", "Odradek compatibility suite")
    group.addoption(
        "--broker",
        choices=sorted(BROKER_KINDS),
        default="odradek",
        help="which broker the suite starts (ignored with --bootstrap); default: odradek",
    )
    group.addoption("--bootstrap", metavar="HOST:PORT", help="test an already running broker instead")
    group.addoption(
        "--clients",
        default=",".join(ALL_CLIENTS),
        help=f"comma-separated clients to run (default: all of {','.join(ALL_CLIENTS)})",
    )
    group.addoption("--matrix-out", metavar="PATH", help="also write the compatibility matrix as Markdown")
    group.addoption(
        "--nodes",
        type=int,
        choices=(1, CLUSTER_SIZE),
        default=1,
        help=f"brokers to start: 1, or {CLUSTER_SIZE} for a cluster (runs the tests marked cluster)",
    )
    group.addoption(
        "--chaos-rounds",
        type=int,
        default=CI_CHAOS_ROUNDS,
        metavar="N",
        help=f"kill/restart rounds of the failover scenario (default {CI_CHAOS_ROUNDS}; 20+ for a long run)",
    )
    group.addoption(
        "--nemesis-rounds",
        type=int,
        default=None,
        metavar="N",
        help="fault rounds of the nemesis scenario, one fault each, in turn "
        "(default: each fault that can run here once; 100 for the long mode)",
    )
    group.addoption(
        "--share-history-records",
        type=int,
        default=CI_SHARE_HISTORY_RECORDS,
        metavar="N",
        help=f"records of the scripted share-group run (default {CI_SHARE_HISTORY_RECORDS}; "
        "20000 for the long mode)",
    )


def selected_clients(config: pytest.Config) -> list[str]:
    names = [n.strip() for n in config.getoption("--clients").split(",") if n.strip()]
    unknown = set(names) - set(ALL_CLIENTS)
    if unknown:
        raise pytest.UsageError(f"unknown clients {sorted(unknown)}; choose from {ALL_CLIENTS}")
    return names


def pytest_configure(config: pytest.Config) -> None:
    target = config.getoption("--bootstrap") or config.getoption("--broker")
    matrix = Matrix(
        selected_clients(config), f"Compatibility matrix: {target}", config.getoption("--matrix-out")
    )
    config.stash[MATRIX_KEY] = matrix
    config.pluginmanager.register(matrix, "compat-matrix")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "client" in metafunc.fixturenames:
        metafunc.parametrize("client", selected_clients(metafunc.config))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    single = pytest.mark.skip(reason=f"a cluster scenario: run with --nodes {CLUSTER_SIZE}")
    cluster_timeout_s = CLUSTER_TEST_TIMEOUT_S + CHAOS_ROUND_TIMEOUT_S * config.getoption("--chaos-rounds")
    nemesis_rounds = config.getoption("--nemesis-rounds") or len(FAULTS)
    nemesis_timeout_s = CLUSTER_TEST_TIMEOUT_S + NEMESIS_ROUND_TIMEOUT_S * nemesis_rounds
    for item in items:
        in_cluster = item.get_closest_marker("cluster") is not None
        if config.getoption("--nodes") == 1 and in_cluster:
            item.add_marker(single)
        # Only this suite's tests: the hook sees every collected item, and the other suites' tests
        # keep pyproject's deadline (a CPU-bound property test outlasts 150 s on a loaded machine).
        if item.get_closest_marker("timeout") is None and SUITE_DIR in item.path.parents:
            slow = item.get_closest_marker("slow") is not None
            single_timeout_s = SLOW_TEST_TIMEOUT_S if slow else TEST_TIMEOUT_S
            if item.path.name == "test_share_history.py":
                records = config.getoption("--share-history-records")
                single_timeout_s += int(SHARE_HISTORY_S_PER_RECORD * records)
            nemesis = "nemesis_cluster" in getattr(item, "fixturenames", ())
            in_cluster_timeout_s = nemesis_timeout_s if nemesis else cluster_timeout_s
            item.add_marker(pytest.mark.timeout(in_cluster_timeout_s if in_cluster else single_timeout_s))
        key = cell_key(item)
        if key is not None:
            item.user_properties.append((CELL_PROPERTY, key))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Resolve jars and compile the Java client before any test runs.

    On a first run Maven may need minutes; doing it here keeps that out of the per-test deadline.
    """
    config = session.config
    clients = {cell_key(item)[1] for item in session.items if cell_key(item) is not None}  # type: ignore[index]
    try:
        if config.getoption("--bootstrap") is None and config.getoption("--broker") == "apache-kafka":
            kafka_jars()
        if any(item.path.name in TOOL_MODULES for item in session.items):
            kafka_tools_jars()
        for name in sorted(clients & set(JAVA_CLIENTS)):
            build_java_client(JAVA_CLIENTS[name])
        if any(item.path.name in SHARE_MODULES for item in session.items):
            build_share_client(SHARE_CLIENT_VERSION)
        if any(item.path.name == "test_streams_groups.py" for item in session.items):
            build_streams_app()
    except RuntimeError as exc:
        pytest.exit(f"cannot prepare the compatibility suite: {exc}", returncode=3)


@pytest.fixture(scope="session")
def brokers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerPool]:
    pool = BrokerPool(request.config, tmp_path_factory)
    yield pool
    pool.stop_all()


@pytest.fixture(scope="session")
def broker(brokers: BrokerPool) -> RunningBroker:
    """The session's broker, with auto-creation of topics on (Kafka's default)."""
    return brokers.get()


@pytest.fixture(scope="session")
def cluster(brokers: BrokerPool) -> Cluster:
    """The three-broker cluster of ``--nodes 3``, whose nodes scenarios kill and restart."""
    return brokers.cluster()


@pytest.fixture(scope="session")
def drivers(brokers: BrokerPool, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DriverPool]:
    """Depends on ``brokers`` so that clients are closed before their brokers stop."""
    pool = DriverPool(tmp_path_factory.mktemp("client-logs"))
    yield pool
    pool.close_all()


@pytest.fixture
def driver(client: str, broker: RunningBroker, drivers: DriverPool) -> Driver:
    """The client under test, talking to the session broker."""
    return drivers.get(client, broker.bootstrap)


@pytest.fixture
def admin(broker: RunningBroker, drivers: DriverPool) -> Driver:
    """The setup client (confluent-kafka), so a scenario's preparation never depends on the client under test."""
    return drivers.get("confluent-kafka", broker.bootstrap)


@pytest.fixture(scope="session")
def group_coordinator(broker: RunningBroker, drivers: DriverPool) -> None:
    """Wait until the broker's group coordinator answers (creating ``__consumer_offsets``).

    Until then Kafka answers an OffsetFetch that did not go through FindCoordinator with
    NOT_COORDINATOR, and kcat's assign-mode consumer treats that as fatal; any cluster that has
    seen a consumer group is past this point.  The probe uses kafka-python: confluent-kafka
    2.15-2.16 (librdkafka) crashes the whole test process with SIGSEGV on
    ``list_consumer_group_offsets`` against an Apache Kafka 4.3 whose coordinator is not up yet.
    """
    admin = drivers.get("kafka-python", broker.bootstrap)
    # Kafka loads the partitions of __consumer_offsets one by one: one group answering says
    # little about the next, so probe groups spread over many of them.
    for probe in range(16):
        eventually(lambda probe=probe: admin.group_offsets(f"compat-coordinator-probe-{probe}"), timeout_s=90)


@pytest.fixture(scope="module")
def share_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaProcess]:
    """The module's ShareClient JVM (kafka-clients 4.4.0): its share consumers and admin calls
    (a member a scenario kills runs in a JVM of its own)."""
    jvm = share_jvm(tmp_path_factory.mktemp("share-client") / "share-client.log")
    yield jvm
    jvm.stop()


@pytest.fixture(scope="session")
def tool_classpath() -> str:
    """The Kafka tools' classpath (jars resolved from Maven); skips where java is missing."""
    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    return classpath(kafka_tools_jars())


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name unique to this test (and readable in broker logs)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name).strip("-")[:150]
    return f"compat-{stem}-{uuid.uuid4().hex[:8]}"
