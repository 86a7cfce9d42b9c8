"""``odradek local-cluster``: a cluster of brokers (and an etcd, unless given one) on this machine.

For trying the cluster mode and for development: every broker is an ``odradek serve`` process
with its own data directory and log file under one directory, so stopping and starting it again
(same command) keeps the data.  Ctrl-C stops everything.  Production clusters run one
``odradek serve --cluster ...`` per machine instead (README, "A cluster").
"""

from __future__ import annotations

import argparse
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from broker.cli.table import render_table

READY_TIMEOUT_S = 60.0


def add_local_cluster_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "local-cluster", help="run a cluster of brokers and an etcd on this machine (Ctrl-C stops it)"
    )
    parser.add_argument("--brokers", type=int, default=3, help="how many brokers (default 3)")
    parser.add_argument("--data-dir", default="odradek-cluster", help="where data and logs go")
    parser.add_argument("--port", type=int, default=9092, help="the first broker's port; the others follow")
    parser.add_argument("--etcd", help="use this etcd (etcd://host:port,...) instead of starting one")
    parser.add_argument("--etcd-port", type=int, default=2379, help="client port of the etcd it starts")
    parser.set_defaults(run=run_local_cluster)


def _start(command: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    with log_path.open("ab") as log_file:
        return subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log_path: Path) -> None:
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


def _start_etcd(base: Path, port: int) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("etcd")
    if binary is None:
        raise SystemExit(
            "odradek: etcd is not installed; install it (Debian: apt-get install etcd-server) "
            "or pass --etcd etcd://host:port of a running one"
        )
    client, peer = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}"
    command = [
        binary,
        "--name=local",
        f"--data-dir={base / 'etcd'}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=local={peer}",
    ]
    log_path = base / "etcd.log"
    process = _start(command, log_path)
    _wait_for_port(port, process, log_path)
    return process, f"etcd://127.0.0.1:{port}"


def run_local_cluster(args: argparse.Namespace) -> None:
    base = Path(args.data_dir).resolve()
    base.mkdir(parents=True, exist_ok=True)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        endpoints = args.etcd
        if endpoints is None:
            etcd, endpoints = _start_etcd(base, args.etcd_port)
            processes.append(etcd)
        rows = []
        for node in range(1, args.brokers + 1):
            port = args.port + node - 1
            data, log_path = base / f"broker-{node}", base / f"broker-{node}.log"
            command = [sys.executable, "-m", "broker.cli.main", "serve", "--node-id", str(node)]
            command += ["--data-dir", str(data), "--listeners", f"PLAINTEXT://127.0.0.1:{port}"]
            command += ["--cluster", endpoints]
            internal_replicas = str(min(3, args.brokers))  # Kafka's default where the brokers allow it
            for key in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor"):
                command += ["--override", f"{key}={internal_replicas}"]
            processes.append(_start(command, log_path))
            rows.append((node, f"127.0.0.1:{port}", str(data), str(log_path)))
        for (_, address, _, log_path), process in zip(rows, processes[-len(rows) :], strict=True):
            print(f"waiting for {address} ...", file=sys.stderr)
            _wait_for_port(int(address.rsplit(":", 1)[1]), process, Path(log_path))
        print(render_table(["node", "address", "data", "log"], rows))
        print(
            f"\netcd: {endpoints}\nbootstrap.servers={','.join(row[1] for row in rows)}\nCtrl-C stops the cluster.",
            flush=True,  # a pipe buffers: whoever waits for the table gets it now
        )
        # Blocked only now, so the children (started above) keep their default handlers.
        stop_signals = {signal.SIGINT, signal.SIGTERM}
        signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
        signal.sigwait(stop_signals)
        print("stopping the cluster ...", file=sys.stderr)
    except KeyboardInterrupt:  # Ctrl-C while it was still starting: stop what was started
        print("stopping the cluster ...", file=sys.stderr)
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
