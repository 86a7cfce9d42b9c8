"""One throughput trial: fresh broker, create the topic, produce everything, consume it all.

Why produce and consume run as two separate client processes: a consumer that starts after
the producer has exited reads everything from the broker, not from a warm client, and each
phase's CPU figures cover that phase alone.
"""

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, ClusterMetadata, NewTopic

from bench.launchers import Launcher, RunningBroker, running
from compat_tests.kit.procstat import snapshot

REPO_ROOT = Path(__file__).resolve().parent.parent
# Spare time for a client process to start, connect and exit beyond its phase timeout.
PROCESS_SLACK_S = 30.0


# Kafka's controller refuses one operation of more than 10,000 records ("Unable to perform
# excessively large batch operation"): a topic is a record and each partition another.
CREATE_PARTITIONS_PER_REQUEST = 5000


CLIENTS = {"librdkafka": "bench.load", "raw": "bench.raw_load"}
"""The produce/consume client processes a throughput bench can run, by ``--client`` name."""


def add_client_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--client", choices=sorted(CLIENTS), default="librdkafka",
                        help="the produce/consume client: librdkafka (default), or raw: pre-built "
                             "requests, so that the broker, not the client, bounds the throughput")  # fmt: skip


@dataclass(frozen=True)
class Settings:
    """What one trial does; identical for every broker so the figures compare."""

    messages: int
    value_size: int = 1024
    partitions: int = 4
    topic: str = "bench"
    phase_timeout_s: float = 300.0
    transaction_records: int = 0
    """Produce in transactions of this many records (0: no transactions, acks=1)."""
    topic_count: int = 1
    """More than one: topics ``{topic}-000``, ``{topic}-001``, ... of ``partitions`` each."""
    replication_factor: int = 1
    min_insync_replicas: int = 0
    """The topics' ``min.insync.replicas`` (0: the broker's default)."""
    idempotent: bool = False
    """Produce with acks=all from an idempotent producer, librdkafka's defaults otherwise
    (``bench.load.IDEMPOTENT_CONFIG``) instead of the tuned acks=1 producer."""
    client: str = "bench.load"
    """The client process's module: ``bench.load`` (librdkafka) or ``bench.raw_load`` (pre-built
    requests, for a broker that one librdkafka process cannot saturate)."""

    @property
    def topics(self) -> list[str]:
        """The topic names, produced to and consumed from together."""
        if self.topic_count == 1:
            return [self.topic]
        return [f"{self.topic}-{n:03d}" for n in range(self.topic_count)]


@dataclass(frozen=True)
class Phase:
    """The outcome of one produce or consume pass."""

    seconds: float
    bytes: int
    client_cpu_seconds: float
    broker_cpu_seconds: float
    machine_cpu_seconds: float
    avg_batch_bytes: float = 0.0
    settled_cpu_seconds: float = 0.0  # produce only: see bench.load.Window.settled_cpu_seconds

    @property
    def mb_per_s(self) -> float:
        """Value bytes (10^6 per MB) per second; keys, headers and framing are not counted."""
        return self.bytes / 1e6 / self.seconds

    @property
    def broker_cores(self) -> float:
        """Average cores the broker used: near 1.0 for a single-threaded broker means CPU-bound."""
        return self.broker_cpu_seconds / self.seconds

    @property
    def broker_cpu_s_per_gb(self) -> float:
        """Broker CPU seconds per 10^9 value bytes: the cost of the broker's code, and much
        less sensitive than MB/s to neighbours taking the shared cores."""
        return self.broker_cpu_seconds / (self.bytes / 1e9)

    @property
    def to_disk_cpu_s_per_gb(self) -> float:
        """Machine CPU but the client's, until the data was on disk, per 10^9 value bytes: the
        fair comparison of a broker that fsyncs before acks with one that leaves the writeback
        to the kernel (it includes neighbours' noise, see ``other_cores``)."""
        return self.settled_cpu_seconds / (self.bytes / 1e9)

    @property
    def client_cores(self) -> float:
        return self.client_cpu_seconds / self.seconds

    @property
    def other_cores(self) -> float:
        """Cores taken by everything else on the machine: noise, when well above zero."""
        return (
            max(0.0, self.machine_cpu_seconds - self.broker_cpu_seconds - self.client_cpu_seconds)
            / self.seconds
        )


@dataclass(frozen=True)
class Trial:
    broker: str
    produce: Phase
    consume: Phase
    idle_rss_bytes: int
    peak_rss_bytes: int
    """The largest of ``node_peak_rss_bytes``: a cluster's biggest broker."""
    node_peak_rss_bytes: tuple[int, ...] = ()
    """Each broker's peak resident set (one for a single broker, three for a cluster)."""


def _has_leaders(metadata: ClusterMetadata, name: str, settings: Settings) -> bool:
    """Every partition has a leader and every replica is in sync (an acks=all produce to a
    replica still joining would wait for it, or fail below ``min.insync.replicas``)."""
    topic = metadata.topics.get(name)
    found = topic.partitions.values() if topic and topic.error is None else []
    return len(found) == settings.partitions and all(
        p.leader >= 0 and len(p.isrs) >= settings.replication_factor for p in found
    )


def create_topic(broker: RunningBroker, settings: Settings, timeout_s: float = 30.0) -> None:
    """Create the topics explicitly (not every broker auto-creates), in as few requests as
    Kafka takes (``CREATE_PARTITIONS_PER_REQUEST``), and wait until Metadata shows a leader for
    every partition (and a full ISR), so the producer never races topic creation."""
    admin = AdminClient(broker.librdkafka())
    config = (
        {"min.insync.replicas": str(settings.min_insync_replicas)} if settings.min_insync_replicas else {}
    )
    deadline = time.monotonic() + timeout_s
    per_request = max(1, CREATE_PARTITIONS_PER_REQUEST // settings.partitions)
    for first in range(0, len(settings.topics), per_request):
        names = settings.topics[first : first + per_request]
        topics = [
            NewTopic(name, settings.partitions, settings.replication_factor, config=config) for name in names
        ]
        futures = admin.create_topics(topics, request_timeout=timeout_s, operation_timeout=timeout_s)
        for future in futures.values():
            future.result(timeout=max(0.0, deadline - time.monotonic()))
    while time.monotonic() < deadline:
        metadata = admin.list_topics(None if len(settings.topics) > 1 else settings.topic, timeout=30)
        if all(_has_leaders(metadata, name, settings) for name in settings.topics):
            return
        time.sleep(0.2)
    raise TimeoutError(f"topics {settings.topic!r}* have no leaders after {timeout_s}s")


def run_phase(broker: RunningBroker, phase: str, settings: Settings) -> Phase:
    """Run ``bench.load`` for one phase in its own process and read its JSON result."""
    argv = [sys.executable, "-m", settings.client, phase, "--bootstrap", broker.bootstrap]
    argv += ["--broker-pids", ",".join(map(str, broker.pids)), "--topic", ",".join(settings.topics)]
    argv += ["--partitions", str(settings.partitions), "--messages", str(settings.messages)]
    argv += ["--value-size", str(settings.value_size), "--timeout", str(settings.phase_timeout_s)]
    if broker.client_config:
        argv += ["--client-config", json.dumps(broker.client_config)]
    if phase == "produce" and settings.transaction_records:
        argv += ["--transaction-records", str(settings.transaction_records)]
    if phase == "produce" and settings.idempotent:
        argv.append("--idempotent")
    done = subprocess.run(
        argv,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
        timeout=settings.phase_timeout_s + PROCESS_SLACK_S,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{phase} client failed with exit code {done.returncode}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result.pop("messages")
    return Phase(**result)


def measure(broker: RunningBroker, settings: Settings) -> Trial:
    """Create the topic, produce, consume on a fresh, ready broker (or every broker of a
    cluster: ``broker.pids``)."""
    idle = max(snapshot(pid).rss_bytes for pid in broker.pids)
    create_topic(broker, settings)
    produce = run_phase(broker, "produce", settings)
    consume = run_phase(broker, "consume", settings)
    peaks = tuple(snapshot(pid).peak_rss_bytes for pid in broker.pids)
    return Trial(broker.name, produce, consume, idle, max(peaks), peaks)


def run_trial(launcher: Launcher, settings: Settings) -> Trial:
    """Measure one fresh broker end to end; it is stopped before this returns or raises."""
    with running(launcher) as broker:
        return measure(broker, settings)


def interleave(
    names: Sequence[str], repeat: int, trial_of: Callable[[str], Trial]
) -> tuple[dict[str, list[Trial]], list[dict[str, str]]]:
    """Run ``trial_of`` for every name in turn, ``repeat`` times over (so drift on the shared
    machine hits every broker alike), printing each outcome; a failed trial is recorded, not
    raised, so one broker failing does not hide the others' figures."""
    trials: dict[str, list[Trial]] = {name: [] for name in names}
    failures: list[dict[str, str]] = []
    for rep in range(1, repeat + 1):
        for name in names:
            print(f"[{rep}/{repeat}] {name}: starting", flush=True)
            started = time.monotonic()
            try:
                trial = trial_of(name)
            except Exception as exc:
                print(f"[{rep}/{repeat}] {name}: FAILED: {exc}", flush=True)
                failures.append({"broker": name, "repeat": str(rep), "error": str(exc)})
                continue
            trials[name].append(trial)
            print(f"[{rep}/{repeat}] {name}: produce {trial.produce.mb_per_s:.0f} MB/s, "
                  f"consume {trial.consume.mb_per_s:.0f} MB/s, peak RSS {trial.peak_rss_bytes / 1e6:.0f} MB "
                  f"({time.monotonic() - started:.0f}s)", flush=True)  # fmt: skip
    return trials, failures
