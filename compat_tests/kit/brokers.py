"""Start and stop the brokers the compatibility suite runs against.

Two kinds of broker can be started on free loopback ports, each in its own work directory:

- ``odradek``: the project's broker, through its ``odradek serve`` console script;
- ``apache-kafka``: a single-node KRaft Apache Kafka from Maven Central jars, the reference that
  proves a scenario is right (a scenario failing there is a wrong test).

Both return a :class:`RunningBroker` whose ``stop()`` terminates the process (SIGTERM, then
SIGKILL). The Spark tests import this module too, so it depends on nothing but the standard
library and :mod:`compat_tests.maven`::

    with running_broker("apache-kafka", workdir) as broker:
        use(broker.bootstrap)
"""

from __future__ import annotations

import base64
import concurrent.futures
import ctypes
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat_tests.kit.raw_protocol import metadata_broker_count
from compat_tests.maven import SLF4J_BINDING, classpath, compiled_classes, resolve_jars

KAFKA_VERSION = os.environ.get("ODRADEK_KAFKA_VERSION", "4.3.1")
"""Apache Kafka broker version. 4.3.1 is the newest 4.x whose server artifacts all resolve
(4.4.0's kafka-tools-api is not published)."""

KAFKA_HEAP = ["-Xms128m", "-Xmx512m"]
KAFKA_TEST_JIT = ["-XX:TieredStopAtLevel=1"]
"""The JIT of the Kafka JVMs the test suites start (:func:`kafka_jvm`'s default): the client
compiler (C1) only, as the suite's Java clients and tools run. A node spends its first seconds
compiling with both compilers, which on the loaded two-core CI machine took a start (format, then
serve) from ~7 s to 12-25 s, and a restart of a 3-node cluster's node to 30-50 s; the suites' loads
(hundreds of records a second) never need C2's code. Benchmarks, which measure Kafka's throughput,
keep the full JIT (``quick_jit=False``; :data:`compat_tests.kit.clusters.BENCHMARK_CLUSTER_KINDS`,
``bench/launchers.py``)."""
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0
SUITE_OVERRIDES: Mapping[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.min.heartbeat.interval.ms": "500",
    "group.share.heartbeat.interval.ms": "500",
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.min.heartbeat.interval.ms": "500",
    "group.streams.heartbeat.interval.ms": "500",
    "group.streams.min.session.timeout.ms": "10000",
    "group.streams.session.timeout.ms": "10000",
}
"""Settings every broker of the suite gets. Kafka's own example server.properties sets the first
for development use, and without it every first group join waits three seconds. The second
lets a share group's ``share.record.lock.duration.ms`` go down to a second (Kafka's lowest bound
for it; by default at least 15 s), so the share-group scenarios see an acquisition lock expire
in seconds (``test_share_groups.py``). The heartbeat settings (5 s by default, and at least 5 s)
give a new share-group member its assignment half a second after the group initialized its
partitions rather than five. The streams-group settings (KIP-1071, ``test_streams_groups.py``)
likewise: a streams group's first assignment is not delayed 3 s (the default initial rebalance
delay), members heartbeat every 500 ms rather than 5 s (each step of a task's move from one
member to another waits for a heartbeat), and a member that vanished (SIGKILL) loses its tasks
after 10 s rather than the default (and lowest allowed) 45 s."""

KAFKA_SINGLE_NODE: Mapping[str, str] = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "share.coordinator.state.topic.num.partitions": "4",
}
"""Internal topics default to three replicas, which a single node cannot host. The share-group
state topic's 50 partitions (its default) would make the first share group wait seconds while a
loaded node creates and loads them."""


KAFKA_INTERNAL_USER = "admin"
_PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="{KAFKA_INTERNAL_USER}" password="odradek-compat" user_{KAFKA_INTERNAL_USER}="odradek-compat";'
)
KAFKA_AUTHORIZER_SETTINGS: Mapping[str, str] = {
    "inter.broker.listener.name": "INTERNAL",
    "sasl.enabled.mechanisms": "PLAIN",
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
    "sasl.mechanism.controller.protocol": "PLAIN",
    "listener.name.internal.plain.sasl.jaas.config": _PLAIN_JAAS,
    "listener.name.controller.plain.sasl.jaas.config": _PLAIN_JAAS,
    "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
    "super.users": f"User:{KAFKA_INTERNAL_USER}",
}
"""What a KRaft node running the StandardAuthorizer needs, with an ``INTERNAL`` listener beside
PLAINTEXT, while its clients stay anonymous.

The node must reach its own controller and itself (broker registration and heartbeats,
transaction markers, AddPartitionsToTxn verification, forwarded admin requests) as a principal
the authorizer lets do anything, yet PLAINTEXT clients are ``User:ANONYMOUS``, which a test
must be able to deny. So the controller and inter-broker (INTERNAL) listeners speak SASL PLAIN
as a super user of their own, and clients keep the PLAINTEXT listener."""


@dataclass
class RunningBroker:
    """A broker the suite can talk to; ``process`` is None for a broker someone else runs."""

    bootstrap: str
    kind: str
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    addresses: Mapping[str, str] = field(default_factory=dict)
    """``host:port`` of each extra listener (by name) the broker was started with."""

    def stop(self) -> None:
        """Terminate the broker (SIGTERM, then SIGKILL after a grace period); idempotent."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log_tail(self, lines: int = 40) -> str:
        """The end of the broker's log, to explain a failed start."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Runs in the child before exec: ask Linux to SIGTERM it when the test process dies.

    Without this a pytest killed by a signal (no finalizers run) would leave a JVM broker (or an
    etcd member, tests/support/etcd_cluster.py) behind.
    """
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="spawner")
"""The one thread that starts every server process: Linux sends the parent-death signal when the
*thread* that forked the child ends, not the process, so a node restarted from a short-lived
thread (a scenario restarting a broker while its clients keep polling) was SIGTERMed the moment
that thread finished. This thread lives as long as the test process."""


def spawn(command: list[str], **popen: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(command, **popen)`` from :data:`_SPAWNER`, dying with the test process."""
    return _SPAWNER.submit(subprocess.Popen, command, preexec_fn=die_with_parent, **popen).result()


LOWEST_TEST_PORT = 20_000
_PORT_CHOICE = random.Random()  # its own generator: unaffected by tests seeding `random`


def _ephemeral_port_floor() -> int:
    """Where the kernel starts handing out ports to outgoing connections (Linux's default)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def _port_range() -> tuple[int, int]:
    """The ports this process picks from: below the ephemeral range, and under pytest-xdist a
    slice of it per worker.

    A port is free when chosen, but a broker stopped to be restarted leaves its port free for a
    while; another worker must not pick it meanwhile. Slices keep the workers of one run apart.
    """
    low, high = LOWEST_TEST_PORT, max(_ephemeral_port_floor(), LOWEST_TEST_PORT + 1000)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if worker.startswith("gw") and worker[2:].isdigit() and workers > 1:
        width = (high - low) // workers
        low += int(worker[2:]) % workers * width
        high = low + width
    return low, high


def free_ports(count: int, run: int = 1) -> list[int]:
    """Ports that are free right now, below the ephemeral range; all sockets stay bound until
    all are chosen, so they differ.  With ``run`` > 1, each chosen port is the first of ``run``
    free ports in a row (``odradek serve --processes``: the shared port, then one per process).

    A broker restarted on its port must find it free again. Ports the kernel picks for
    ``bind(0)`` come from the range it also gives outgoing connections, and the clients still
    reconnecting to a stopped broker would take them; ports below that range it never hands out.
    """
    low, high = _port_range()
    with ExitStack() as stack:
        chosen: list[int] = []
        while len(chosen) < count:
            port = _PORT_CHOICE.randrange(low, high - run)
            sockets = [stack.enter_context(socket.socket()) for _ in range(run)]
            try:
                for offset, sock in enumerate(sockets):
                    sock.bind(("127.0.0.1", port + offset))
            except OSError:
                continue
            chosen.append(port)
        return chosen


def wait_until_ready(broker: RunningBroker, timeout: float = READY_TIMEOUT_S, brokers: int = 1) -> None:
    """Block until the broker answers Metadata with itself (and ``brokers`` in all) in it, or
    fail with its log."""
    host, port = broker.bootstrap.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    last_error = "no answer"
    while time.monotonic() < deadline:
        if broker.process is not None and broker.process.poll() is not None:
            raise RuntimeError(
                f"{broker.kind} exited with {broker.process.returncode} before it was ready:\n"
                f"{broker.log_tail()}"
            )
        try:
            listed = metadata_broker_count(host, int(port), timeout=2.0)
            if listed >= brokers:
                return
            last_error = f"Metadata listed {listed} of {brokers} brokers"
        except (OSError, struct.error) as exc:
            last_error = str(exc)
        time.sleep(0.2)
    broker.stop()
    raise RuntimeError(
        f"{broker.kind} at {broker.bootstrap} not ready after {timeout:.0f}s ({last_error}):\n"
        + broker.log_tail()
    )


def kafka_jars(version: str = KAFKA_VERSION) -> Path:
    """The broker classpath: kafka_2.13 pulls in server, metadata, raft, storage and clients."""
    return resolve_jars(f"kafka-{version}", [f"org.apache.kafka:kafka_2.13:{version}", SLF4J_BINDING])


def kafka_tools_jars(version: str = KAFKA_VERSION) -> Path:
    """Apache Kafka's command-line tools: kafka-tools (most of them) with kafka_2.13, which
    still holds ``kafka.admin.ConfigCommand`` in 4.x."""
    return resolve_jars(
        f"kafka-tools-{version}",
        [f"org.apache.kafka:kafka_2.13:{version}", f"org.apache.kafka:kafka-tools:{version}", SLF4J_BINDING],
    )


TELEMETRY_RECORDER = Path(__file__).resolve().parents[1] / "java" / "TelemetryRecorder.java"
TELEMETRY_REPORTER: Mapping[str, str] = {"metric.reporters": "TelemetryRecorder"}
"""The override that makes Apache Kafka serve client telemetry (KIP-714): it advertises
GetTelemetrySubscriptions and PushTelemetry only while a reporter exporting client telemetry is
configured. ``TelemetryRecorder`` (on every Kafka broker's classpath here) logs each push;
Odradek serves client telemetry without it and ignores the key."""


def random_cluster_id() -> str:
    """A cluster id in Kafka's format (URL-safe base64 of a UUID, not starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def properties_text(values: Mapping[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in values.items())


def _extra_listeners(extra: Mapping[str, str], run: int = 1) -> tuple[dict[str, str], str, str]:
    """Addresses for extra listeners (name -> security protocol) on free ports (each the first
    of ``run`` in a row), and their ``listeners`` entries and ``listener.security.protocol.map``
    entries, comma-led."""
    ports = free_ports(len(extra), run)
    addresses = {name: f"127.0.0.1:{port}" for name, port in zip(extra, ports, strict=True)}
    listeners = "".join(f",{name}://{address}" for name, address in addresses.items())
    protocols = "".join(f",{name}:{protocol}" for name, protocol in extra.items())
    return addresses, listeners, protocols


def kafka_jvm(version: str = KAFKA_VERSION, quick_jit: bool = True) -> list[str]:
    """``java`` with the heap, JIT (:data:`KAFKA_TEST_JIT` unless ``quick_jit`` is false) and
    classpath (Kafka's jars and the telemetry recorder) of every Apache Kafka node the suite starts."""
    libs = kafka_jars(version)
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("java is not installed: it is needed to run Apache Kafka")
    recorder = compiled_classes(TELEMETRY_RECORDER, libs, f"kafka-{version}")
    jit = KAFKA_TEST_JIT if quick_jit else []
    return [java, *KAFKA_HEAP, *jit, "-cp", classpath(recorder, libs)]


def kafka_node_config(node_id: int, broker_port: int, controller_port: int, data_dir: Path) -> dict[str, str]:
    """The settings of a combined broker+controller KRaft node with a PLAINTEXT client listener
    and a PLAINTEXT controller listener; callers add the quorum and their own settings."""
    return {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "listeners": f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(data_dir),
        **SUITE_OVERRIDES,
    }


def format_kafka_storage(jvm: list[str], properties: Path, cluster_id: str, *mode: str) -> None:
    """``kafka-storage format`` a node's log directory for ``cluster_id``; ``mode`` is how its
    quorum starts (``--standalone`` for a dynamic single-voter quorum, nothing for static
    ``controller.quorum.voters``)."""
    formatted = subprocess.run(
        [*jvm, "kafka.tools.StorageTool", "format", *mode, "-t", cluster_id, "-c", str(properties)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if formatted.returncode != 0:
        output = formatted.stdout[-2000:] + formatted.stderr[-2000:]
        raise RuntimeError(f"kafka storage format failed:\n{output}")


def launch(command: list[str], workdir: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """Start a broker process in ``workdir``, appending its output to ``log_path`` (a restarted
    node keeps the log of its earlier lives), dying with the test process."""
    with log_path.open("ab") as log:
        return spawn(command, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)


def start_apache_kafka(
    workdir: Path,
    overrides: Mapping[str, str] | None = None,
    version: str = KAFKA_VERSION,
    extra_listeners: Mapping[str, str] | None = None,
) -> RunningBroker:
    """Format and start a combined broker+controller KRaft node; return once it serves.

    ``extra_listeners`` (name -> security protocol) are added beside PLAINTEXT on free ports.
    """
    jvm = kafka_jvm(version)
    workdir.mkdir(parents=True, exist_ok=True)
    broker_port, controller_port = free_ports(2)
    settings = dict(overrides or {})
    secured = bool(settings.get("authorizer.class.name"))
    internal = {"INTERNAL": "SASL_PLAINTEXT"} if secured else {}
    addresses, extra, protocols = _extra_listeners({**(extra_listeners or {}), **internal})
    controller_protocol = "SASL_PLAINTEXT" if secured else "PLAINTEXT"
    config = kafka_node_config(1, broker_port, controller_port, workdir / "data")
    config["listeners"] += extra
    config["advertised.listeners"] += extra
    config["listener.security.protocol.map"] = (
        f"PLAINTEXT:PLAINTEXT,CONTROLLER:{controller_protocol}{protocols}"
    )
    config["controller.quorum.bootstrap.servers"] = f"127.0.0.1:{controller_port}"
    config.update(KAFKA_SINGLE_NODE)
    if secured:
        config.update(KAFKA_AUTHORIZER_SETTINGS)
    config.update(settings)
    properties = workdir / "server.properties"
    properties.write_text(properties_text(config))
    format_kafka_storage(jvm, properties, random_cluster_id(), "--standalone")
    log_path = workdir / "kafka.log"
    process = launch([*jvm, "kafka.Kafka", str(properties)], workdir, log_path)
    bootstrap = f"127.0.0.1:{broker_port}"
    broker = RunningBroker(bootstrap, "apache-kafka", process, log_path, settings, addresses)
    wait_until_ready(broker)
    return broker


def odradek_command() -> str:
    """The ``odradek`` console script of this interpreter's environment, else the one on PATH."""
    beside = Path(sys.executable).parent / "odradek"
    if beside.exists():
        return str(beside)
    found = shutil.which("odradek")
    if found is None:
        raise RuntimeError("the odradek console script is not installed (pip install -e . in the repo)")
    return found


def odradek_cli(
    *args: str, stdin: str | None = None, stderr: int | None = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    """Run one ``odradek`` command (admin, console, dump-log) to its end; output as text.

    ``stderr`` may be a terminal's descriptor, for what the command shows only on terminals.
    """
    return subprocess.run(
        [odradek_command(), *args],
        input=stdin,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        encoding="utf-8",
        timeout=120,
    )


def start_odradek(
    workdir: Path,
    overrides: Mapping[str, str] | None = None,
    extra_listeners: Mapping[str, str] | None = None,
    log_level: str = "INFO",
    processes: int = 1,
) -> RunningBroker:
    """Start ``odradek serve`` on a free port with the suite's settings; return once it serves.

    ``extra_listeners`` (name -> security protocol) are added beside PLAINTEXT on free ports.
    ``log_level`` DEBUG shows what Odradek logs per request of a kind, e.g. each telemetry push.
    ``processes`` > 1 runs ``serve --processes`` (the broker kind ``odradek-processes``): every
    port is then a bootstrap address followed by the processes' own, and the start returns once
    Metadata lists all of them.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    run = processes + 1 if processes > 1 else 1
    (port,) = free_ports(1, run)
    addresses, extra, protocols = _extra_listeners(extra_listeners or {}, run)
    command = [
        odradek_command(),
        "serve",
        "--data-dir",
        str(workdir / "data"),
        "--listeners",
        f"PLAINTEXT://127.0.0.1:{port}{extra}",
    ]
    if protocols:
        command += ["--override", f"listener.security.protocol.map=PLAINTEXT:PLAINTEXT{protocols}"]
    for key, value in {**SUITE_OVERRIDES, **(overrides or {})}.items():
        command += ["--override", f"{key}={value}"]
    command += ["--log-level", log_level]
    if processes > 1:
        command += ["--processes", str(processes)]
    log_path = workdir / "odradek.log"
    process = launch(command, workdir, log_path)
    broker = RunningBroker(
        f"127.0.0.1:{port}", "odradek", process, log_path, dict(overrides or {}), addresses
    )
    wait_until_ready(broker, brokers=processes)
    if processes > 1:
        wait_for_table(broker)
    return broker


def wait_for_table(broker: RunningBroker, timeout: float = READY_TIMEOUT_S) -> None:
    """Until ``serve --processes`` has printed its table: its start is over (a child that dies
    before it ends the start; one that dies after it is restarted)."""
    deadline = time.monotonic() + timeout
    while "Ctrl-C stops them" not in broker.log_tail(100):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"serve --processes printed no table after {timeout:.0f}s:\n{broker.log_tail()}"
            )
        time.sleep(0.1)


def start_odradek_processes(
    workdir: Path,
    overrides: Mapping[str, str] | None = None,
    extra_listeners: Mapping[str, str] | None = None,
) -> RunningBroker:
    """``odradek serve --processes 2``: the suite's broker kind ``odradek-processes``."""
    return start_odradek(workdir, overrides, extra_listeners, processes=2)


BROKER_KINDS = {
    "odradek": start_odradek,
    "odradek-processes": start_odradek_processes,
    "apache-kafka": start_apache_kafka,
}


def start_broker(
    kind: str,
    workdir: Path,
    overrides: Mapping[str, str] | None = None,
    extra_listeners: Mapping[str, str] | None = None,
) -> RunningBroker:
    """Start a broker of ``kind`` (one of :data:`BROKER_KINDS`)."""
    try:
        start = BROKER_KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown broker kind {kind!r}; choose one of {sorted(BROKER_KINDS)}") from None
    return start(workdir, overrides, extra_listeners=extra_listeners)


@contextmanager
def running_broker(
    kind: str, workdir: Path, overrides: Mapping[str, str] | None = None
) -> Iterator[RunningBroker]:
    """A broker that is stopped when the block ends, however it ends."""
    broker = start_broker(kind, workdir, overrides)
    try:
        yield broker
    finally:
        broker.stop()
