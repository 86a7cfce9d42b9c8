"""``odradek serve --processes N``: N broker processes that together serve this machine.

A Python process serves on one core; a machine has many.  Each process here is a whole broker
with its own node id (``node.id``, ``node.id + 1``, ...), its own data directory
(``<log.dirs>/process-<i>``) and its own port (each listener's port + i), which it advertises:
clients reach the leader of a partition directly, with no hop through another process.  Every
process also binds the configured listener ports themselves with SO_REUSEPORT
(``shared.listeners``), so ``bootstrap.servers`` stays the one configured address.  What the
brokers share (topics, leaders, ISRs, ACLs, users, quotas, configs) lives where a cluster's
does, in etcd: a one-member etcd this command starts as a child (data in ``<log.dirs>/etcd``),
or with ``--cluster etcd://...`` the cluster's own, to which each machine then contributes N
brokers.  ``docs/PROCESSES.md`` says why this design, measured, and how far it scales.

This process is the supervisor: it starts the children, restarts one that dies (backing off
while it keeps dying), and on SIGTERM or Ctrl-C stops the brokers together (each does a
controlled shutdown) and then etcd.  Killed with SIGKILL, it leaves no orphans: the children
get SIGTERM from Linux (``broker.cli.children``).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from broker.cli.children import etcd_command, free_port, start_child, stop_all, wait_for_port
from broker.cli.process_moves import move_partitions, wait_registered
from broker.cli.table import render_table
from broker.config.config import BrokerConfig, ConfigError, Listener, host_and_port, parse_metrics_listener

MARKER = "processes.properties"
"""Written in the first log directory: how many processes its data is spread over.  A broker
started there without ``--processes`` refuses, rather than reading ``process-1`` as a topic."""

RESTART_BACKOFF_MAX_S = 30.0
STEADY_RUN_S = 60.0
"""A child that ran this long before dying is restarted at once; one that keeps dying sooner
waits twice as long each time (up to ``RESTART_BACKOFF_MAX_S``), so a broker that cannot start
(a full disk, a bad config) does not spin."""


def listener_text(listeners: list[Listener], shift: int) -> str:
    """``listeners`` in Kafka's syntax, every port moved up by ``shift``."""
    return ",".join(f"{lst.name}://{host_and_port(lst.host, lst.port + shift)}" for lst in listeners)


def check_ports(config: BrokerConfig, processes: int) -> None:
    """Every listener needs a fixed port (shared by all), and the processes' own ports (port + 1
    .. port + N of each listener) must not collide with another listener's."""
    ports = [lst.port for lst in config.listeners]
    if 0 in ports:
        raise ConfigError(
            "num.processes > 1 needs fixed listener ports: the port is every process's bootstrap "
            "address and port + i process i's own"
        )
    taken = [port + shift for port in ports for shift in range(processes + 1)]
    if len(taken) != len(set(taken)):
        raise ConfigError(
            f"listener ports {ports} are too close for {processes} processes: each process i takes "
            f"port + i of every listener; space the listeners' ports more than {processes} apart"
        )


def check_data_dir(base: Path) -> None:
    if (base / "meta.properties").exists():
        raise ConfigError(
            f"{base} holds a single broker's data; run the processes in another log.dirs, or this "
            "one without --processes"
        )


@dataclass
class Child:
    """One supervised process (a broker, or etcd): how to start it, and its life so far."""

    name: str
    command: list[str]
    log_path: Path
    port: int
    """Where it accepts once started."""
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    failures: int = 0
    restart_at: float | None = None
    restarts: int = 0

    def start(self) -> None:
        self.process = start_child(self.command, self.log_path)
        self.started_at, self.restart_at = time.monotonic(), None

    def wait_ready(self) -> None:
        if self.process is not None:
            wait_for_port(self.port, self.process, self.log_path)

    def tend(self, now: float) -> None:
        """Notice that it died (and schedule its restart), or restart it when due."""
        if self.restart_at is not None:
            if now >= self.restart_at:
                self.restarts += 1
                say(f"restarting {self.name} (restart {self.restarts})")
                self.start()
            return
        if self.process is None or self.process.poll() is None:
            return
        ran = now - self.started_at
        self.failures = 0 if ran >= STEADY_RUN_S else self.failures + 1
        delay = min(RESTART_BACKOFF_MAX_S, 2.0**self.failures - 1)
        say(f"{self.name} exited with {self.process.returncode} after {ran:.0f} s; "
            f"restarting in {delay:.0f} s (log: {self.log_path})")  # fmt: skip
        self.restart_at = now + delay


def say(text: str) -> None:
    print(f"odradek: {text}", file=sys.stderr, flush=True)


def child_command(args: argparse.Namespace, config: BrokerConfig, index: int, endpoints: str) -> list[str]:
    """``odradek serve`` for process ``index`` (1-based): the user's settings, then this
    process's own node id, directories, ports and machine."""
    command = [sys.executable, "-m", "broker.cli.main", "serve", "--log-level", args.log_level]
    if args.config:
        command += ["--config", args.config]
    if args.log_requests:
        command.append("--log-requests")
    for key, value in args.override:
        command += ["--override", f"{key}={value}"]
    machine = config.get("broker.machine") or socket.gethostname()
    command += [
        "--node-id", str(config.node_id + index - 1),
        "--data-dir", ",".join(str(Path(d) / f"process-{index}") for d in config.log_dirs),
        "--listeners", listener_text(config.listeners, index),
        "--cluster", endpoints,
    ]  # fmt: skip
    if config.get("advertised.listeners"):
        command += ["--advertised-listeners", listener_text(config.advertised_listeners, index)]
    settings = {
        "num.processes": "1",
        "shared.listeners": listener_text(config.listeners, 0),
        "broker.machine": machine,
        "broker.rack": config.get("broker.rack") or machine,
    }
    metrics = config.get("metrics.listener")
    if metrics:
        host, port = parse_metrics_listener(metrics)
        settings["metrics.listener"] = f"http://{host_and_port(host, port + index - 1)}"
    for key, value in settings.items():
        command += ["--override", f"{key}={value}"]
    return command


def recorded_processes(base: Path) -> int | None:
    """How many processes last ran on ``base`` (its :data:`MARKER`), None on a fresh one."""
    try:
        text = (base / MARKER).read_text()
    except FileNotFoundError:
        return None
    return int(text.strip().split("=", 1)[1])


def run_processes(args: argparse.Namespace, config: BrokerConfig) -> int:
    """Supervise ``config.processes`` brokers until SIGINT or SIGTERM; the exit status."""
    processes = config.processes
    base = Path(config.log_dirs[0]).resolve()
    previous = recorded_processes(base)
    started = max(processes, previous or 0)  # fewer than last time: the extra ones hand over first
    try:
        check_ports(config, started)
        check_data_dir(base)
    except ConfigError as exc:
        print(f"odradek: configuration error: {exc}", file=sys.stderr)
        return 2
    base.mkdir(parents=True, exist_ok=True)
    etcd: Child | None = None
    brokers: list[Child] = []
    try:
        endpoints = config.get("cluster.etcd.endpoints")
        if not endpoints:
            client_port = free_port()
            command = etcd_command(base / "etcd", client_port, free_port())
            etcd = Child("etcd", command, base / "etcd.log", client_port)
            etcd.start()
            etcd.wait_ready()
            endpoints = f"etcd://127.0.0.1:{client_port}"
        for index in range(1, started + 1):
            broker = Child(
                f"node {config.node_id + index - 1}",
                child_command(args, config, index, endpoints),
                base / f"process-{index}.log",
                config.listeners[0].port + index,
            )
            broker.start()
            brokers.append(broker)
        for broker in brokers:
            broker.wait_ready()
        if previous is not None and previous != processes:
            brokers = resize(config, base, brokers, processes, previous)
        (base / MARKER).write_text(f"num.processes={processes}\n")
        own = config.advertised_listeners[0]
        rows = [(b.name, f"{own.host}:{own.port + i}", str(b.log_path)) for i, b in enumerate(brokers, 1)]
        print(render_table(["broker", "address", "log"], rows))
        print(f"\n{processes} broker processes; bootstrap.servers={own.host}:{own.port} "
              f"(etcd: {endpoints}). Ctrl-C stops them.", flush=True)  # fmt: skip
        supervise([*([etcd] if etcd else []), *brokers])
        say("stopping the broker processes ...")
    except KeyboardInterrupt:  # Ctrl-C while starting: stop what was started
        say("stopping the broker processes ...")
    finally:
        stop_all([b.process for b in brokers if b.process is not None], timeout=120)
        if etcd is not None and etcd.process is not None:
            stop_all([etcd.process])
    return 0


def resize(
    config: BrokerConfig, base: Path, brokers: list[Child], processes: int, previous: int
) -> list[Child]:
    """Spread the partitions over ``processes`` brokers after ``previous`` ran (process_moves);
    the brokers that keep running."""
    nodes = [config.node_id + index for index in range(len(brokers))]
    address = f"127.0.0.1:{brokers[0].port}"
    wait_registered(address, nodes)
    say(f"num.processes changed from {previous} to {processes}: moving partitions ...")
    moved = move_partitions(address, nodes[:processes], nodes[processes:])
    say(f"moved {moved} partitions")
    leaving = brokers[processes:]
    stop_all([b.process for b in leaving if b.process is not None], timeout=120)
    for index in range(processes + 1, len(brokers) + 1):
        for directory in config.log_dirs:
            shutil.rmtree(Path(directory) / f"process-{index}", ignore_errors=True)
    return brokers[:processes]


def supervise(children: list[Child]) -> None:
    """Keep the children running until SIGINT or SIGTERM arrives."""
    stop_signals = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)  # children unblock them (children.py)
    while signal.sigtimedwait(stop_signals, 0.5) is None:
        now = time.monotonic()
        for child in children:
            child.tend(now)
