"""``odradek local-cluster``: a cluster of brokers (and an etcd, unless given one) on this machine.

For trying the cluster mode and for development: every broker is an ``odradek serve`` process
with its own data directory and log file under one directory, so stopping and starting it again
(same command) keeps the data.  Ctrl-C stops everything.  Production clusters run one
``odradek serve --cluster ...`` per machine instead (README, "A cluster").

A rolling restart (``odradek local-cluster --rolling-restart``, or SIGHUP to the running
``local-cluster``) restarts the brokers one at a time as an operator would: SIGTERM (a controlled
shutdown: the controller moves the broker's leaderships away first), start it again, and wait
until every partition has all its replicas in sync before the next, so that acks=all producers
never lack the in-sync replicas they need.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from broker.cli.children import etcd_command, start_child, start_etcd, stop_all, wait_for_port
from broker.cli.table import render_table
from broker.client.admin_client import KafkaConnection


def add_local_cluster_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "local-cluster", help="run a cluster of brokers and an etcd on this machine (Ctrl-C stops it)"
    )
    parser.add_argument("--brokers", type=int, default=3, help="how many brokers (default 3)")
    parser.add_argument("--data-dir", default="odradek-cluster", help="where data and logs go")
    parser.add_argument("--port", type=int, default=9092, help="the first broker's port; the others follow")
    parser.add_argument("--etcd", help="use this etcd (etcd://host:port,...) instead of starting one")
    parser.add_argument("--etcd-port", type=int, default=2379, help="client port of the etcd it starts")
    parser.add_argument(
        "--rolling-restart",
        action="store_true",
        help="restart the brokers of the local cluster running in --data-dir one at a time, then exit",
    )
    parser.set_defaults(run=run_local_cluster)


PID_FILE = "local-cluster.pid"
IN_SYNC_TIMEOUT_S = 300.0


def request_rolling_restart(base: Path) -> None:
    """Ask the ``local-cluster`` running in ``base`` for a rolling restart (SIGHUP)."""
    try:
        pid = int((base / PID_FILE).read_text())
        os.kill(pid, signal.SIGHUP)
    except (OSError, ValueError) as exc:
        raise SystemExit(
            f"odradek: no local cluster runs in {base} ({exc}); start one with odradek local-cluster"
        ) from None
    print(f"rolling restart requested; the local-cluster process (pid {pid}) prints its progress")


def _all_in_sync(address: str, brokers: int) -> bool:
    """Whether the broker at ``address`` lists every broker, and every partition with all its
    replicas in its ISR."""
    try:
        with KafkaConnection(address, timeout=5) as connection:
            answer = connection.metadata()
    except OSError:
        return False
    partitions = [p for t in answer["topics"] for p in t["partitions"]]
    return len(answer["brokers"]) == brokers and all(
        sorted(p["isr_nodes"]) == sorted(p["replica_nodes"]) for p in partitions
    )


def _wait_in_sync(address: str, brokers: int) -> None:
    deadline = time.monotonic() + IN_SYNC_TIMEOUT_S
    while not _all_in_sync(address, brokers):
        if time.monotonic() > deadline:
            raise SystemExit(
                f"odradek: replicas not back in sync after {IN_SYNC_TIMEOUT_S:.0f} s; see the logs"
            )
        time.sleep(0.5)


@dataclass
class LocalBroker:
    """One broker of the local cluster: its command line, address and running process."""

    node: int
    address: str
    command: list[str]
    log_path: Path
    process: subprocess.Popen[bytes]

    def restart(self, brokers: int) -> float:
        """Stop it with SIGTERM (a controlled shutdown), start it again, wait until the cluster
        is back in sync; the seconds it took."""
        started = time.monotonic()
        self.process.terminate()
        self.process.wait(timeout=120)
        self.process = start_child(self.command, self.log_path)
        wait_for_port(int(self.address.rsplit(":", 1)[1]), self.process, self.log_path)
        _wait_in_sync(self.address, brokers)
        return time.monotonic() - started


def rolling_restart(brokers: list[LocalBroker]) -> None:
    """Restart ``brokers`` one at a time, each once the cluster is fully in sync."""
    _wait_in_sync(brokers[0].address, len(brokers))
    for broker in brokers:
        print(f"restarting broker {broker.node} ({broker.address}) ...", file=sys.stderr, flush=True)
        took = broker.restart(len(brokers))
        print(f"broker {broker.node} back and in sync after {took:.1f} s", file=sys.stderr, flush=True)
    print("rolling restart done", file=sys.stderr, flush=True)


def run_local_cluster(args: argparse.Namespace) -> None:
    base = Path(args.data_dir).resolve()
    if args.rolling_restart:
        request_rolling_restart(base)
        return
    base.mkdir(parents=True, exist_ok=True)
    processes: list[subprocess.Popen[bytes]] = []
    brokers: list[LocalBroker] = []
    try:
        endpoints = args.etcd
        if endpoints is None:
            command = etcd_command(base / "etcd", args.etcd_port, args.etcd_port + 1)
            processes.append(start_etcd(command, args.etcd_port, base / "etcd.log"))
            endpoints = f"etcd://127.0.0.1:{args.etcd_port}"
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
            brokers.append(
                LocalBroker(node, f"127.0.0.1:{port}", command, log_path, start_child(command, log_path))
            )
            rows.append((node, f"127.0.0.1:{port}", str(data), str(log_path)))
        for broker in brokers:
            print(f"waiting for {broker.address} ...", file=sys.stderr)
            wait_for_port(int(broker.address.rsplit(":", 1)[1]), broker.process, broker.log_path)
        print(render_table(["node", "address", "data", "log"], rows))
        print(
            f"\netcd: {endpoints}\nbootstrap.servers={','.join(row[1] for row in rows)}\n"
            "Ctrl-C stops the cluster; odradek local-cluster --rolling-restart restarts it broker by broker.",
            flush=True,  # a pipe buffers: whoever waits for the table gets it now
        )
        (base / PID_FILE).write_text(str(os.getpid()))
        # Blocked only now, so the children (started above) keep their default handlers.
        stop_signals = {signal.SIGINT, signal.SIGTERM}
        signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals | {signal.SIGHUP})
        while signal.sigwait(stop_signals | {signal.SIGHUP}) == signal.SIGHUP:
            rolling_restart(brokers)
        print("stopping the cluster ...", file=sys.stderr)
    except KeyboardInterrupt:  # Ctrl-C while it was still starting: stop what was started
        print("stopping the cluster ...", file=sys.stderr)
    finally:
        (base / PID_FILE).unlink(missing_ok=True)
        stop_all([broker.process for broker in brokers])
        stop_all(processes)
