"""``python -m bench.idle_fetch``: what an idle consumer of many partitions costs the broker.

Why: a caught-up consumer still sends a Fetch every ``fetch.max.wait.ms`` (500 ms). Without
fetch sessions (KIP-227) each one lists every partition and its answer repeats every
partition's offsets; with a session, the request names nothing and the answer is empty, but
the broker still checks every partition of the session. This measures the broker's CPU for
one such consumer, with sessions and with ``max.incremental.fetch.session.cache.slots=0``
(Kafka's own switch), for Odradek and optionally Apache Kafka.

Per broker configuration (started fresh, in turn): create one topic of ``--partitions``
partitions and produce one record to each. Then

0. the broker's own cores with no client for ``--seconds`` (a JVM's background threads, the
   broker's timers): the baseline, taken off the figures below;
1. a kafka-python consumer (which uses sessions when the broker offers them) ``assign``s every
   partition, reads those records and keeps polling for ``--seconds``: the broker's cores
   over that time (CPU seconds from /proc over wall seconds);
2. the same caught-up fetch, exactly: one connection opens a session at the partitions' ends
   (epoch 0) and sends ``--fetches`` Fetch v12 requests that do not wait, incremental ones
   naming nothing if the broker gave a session, else full ones listing every partition: the
   broker's CPU milliseconds per Fetch.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Producer
from kafka import KafkaConsumer, TopicPartition

from bench.launchers import ApacheKafkaLauncher, Launcher, OdradekLauncher, RunningBroker, running
from bench.throughput import Settings, create_topic
from broker.client.admin_client import KafkaConnection
from compat_tests.kit.procstat import snapshot
from wire.api_keys import ApiKey

TOPIC = "idle"
NO_SESSIONS = "max.incremental.fetch.session.cache.slots=0"


@dataclass(frozen=True)
class Trial:
    label: str
    launcher: Launcher


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.idle_fetch", description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=15.0, help="idle consumer time per broker")
    parser.add_argument("--fetches", type=int, default=300, help="caught-up Fetch requests timed per broker")
    parser.add_argument("--brokers", default="odradek", help="odradek and/or apache-kafka, comma-separated")
    return parser.parse_args(argv)


def trials(brokers: str) -> list[Trial]:
    """Each broker with sessions, then with none."""
    makers = {"odradek": OdradekLauncher, "apache-kafka": ApacheKafkaLauncher}
    return [
        Trial(f"{name} {label}", makers[name](overrides))
        for name in brokers.split(",")
        for label, overrides in (("sessions", []), ("slots=0", [NO_SESSIONS]))
    ]


def fill(bootstrap: str, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for partition in range(partitions):
        producer.produce(TOPIC, b"v", partition=partition)
    if producer.flush(60):
        raise RuntimeError("records left unacknowledged after 60 s")


def cores_over(pid: int, seconds: float, work: Callable[[], None]) -> float:
    """The process's cores (CPU seconds over wall seconds) while ``work`` runs for ``seconds``."""
    start_cpu, start = snapshot(pid).cpu_seconds, time.monotonic()
    while time.monotonic() - start < seconds:
        work()
    return (snapshot(pid).cpu_seconds - start_cpu) / (time.monotonic() - start)


def idle_consumer_cores(broker: RunningBroker, partitions: int, seconds: float) -> float:
    """The broker's cores while a caught-up consumer of every partition polls."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(TOPIC, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        received = 0
        deadline = time.monotonic() + 120
        while received < partitions:
            if time.monotonic() > deadline:
                raise RuntimeError(f"read {received} of {partitions} records in 120 s")
            received += sum(len(records) for records in consumer.poll(500).values())
        consumer.poll(1000)  # settle: the session holds every partition at its end

        def poll() -> None:
            if consumer.poll(500):
                raise RuntimeError("an idle consumer received records")

        return cores_over(broker.pid, seconds, poll)
    finally:
        consumer.close()


def fetch_body(session_id: int, epoch: int, partitions: int) -> dict[str, Any]:
    """A Fetch v12 that does not wait, listing every partition at its end (offset 1), or none."""
    listed = [{"partition": p, "fetch_offset": 1, "partition_max_bytes": 1 << 20} for p in range(partitions)]
    return {
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": [{"topic": TOPIC, "partitions": listed}] if listed else [],
        "forgotten_topics_data": [],
    }


def caught_up_fetch_ms(
    broker: RunningBroker, partitions: int, fetches: int, baseline: float
) -> tuple[float, bool]:
    """(broker CPU ms per caught-up Fetch beyond the baseline, whether the broker gave a session)."""
    with KafkaConnection(broker.bootstrap, timeout=60) as connection:
        session_id = connection.request(ApiKey.FETCH, 12, fetch_body(0, 0, partitions))["session_id"]
        start_cpu, start = snapshot(broker.pid).cpu_seconds, time.monotonic()
        for epoch in range(1, fetches + 1):
            body = fetch_body(session_id, epoch, 0) if session_id else fetch_body(0, -1, partitions)
            response = connection.request(ApiKey.FETCH, 12, body)
            if response["error_code"]:
                raise RuntimeError(f"fetch failed: {response['error_code']}")
        cpu = snapshot(broker.pid).cpu_seconds - start_cpu - baseline * (time.monotonic() - start)
    return 1000 * cpu / fetches, session_id != 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rows = []
    for trial in trials(args.brokers):
        reason = trial.launcher.unavailable_reason()
        if reason:
            sys.exit(f"cannot run {trial.label}: {reason}")
        with running(trial.launcher) as broker:
            create_topic(broker, Settings(messages=0, partitions=args.partitions, topic=TOPIC))
            fill(broker.bootstrap, args.partitions)
            baseline = cores_over(broker.pid, args.seconds, lambda: time.sleep(0.5))
            cores = idle_consumer_cores(broker, args.partitions, args.seconds) - baseline
            per_fetch, in_session = caught_up_fetch_ms(broker, args.partitions, args.fetches, baseline)
        rows.append((trial.label, baseline, cores, per_fetch, in_session))
        print(
            f"{trial.label}: baseline {baseline:.4f}, consumer +{cores:.4f} cores, {per_fetch:.2f} ms/fetch"
        )
    print(
        f"\n{args.partitions} partitions; idle consumer {args.seconds:.0f} s; {args.fetches} caught-up fetches"
    )
    print(
        f"{'broker':<24} {'baseline cores':>14} {'idle consumer +cores':>20} {'CPU ms/fetch':>13} {'session':>8}"
    )
    for label, baseline, cores, per_fetch, in_session in rows:
        print(
            f"{label:<24} {baseline:>14.4f} {cores:>20.4f} {per_fetch:>13.2f} {'yes' if in_session else 'no':>8}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
