"""``python -m bench streams-rebalance``: from a Kafka Streams instance's SIGKILL to a rebalanced group.

Issue 27's benchmark. The compat suite's word count (``compat_tests/java/StreamsApp.java``, Kafka
Streams 4.3.1, ``exactly_once_v2``, one instance per JVM, driven through
``compat_tests.kit.drivers.java_streams``) runs as ``--instances`` instances on a source topic of
``--partitions`` partitions, so the group has two tasks a partition (subtopology 0 reads the lines
and re-keys the words, subtopology 1 counts them). Lines flow in all the time (``--rate`` lines/s of
five words each, confluent-kafka) and the output topic is read ``read_committed`` as it grows.

Each kill SIGKILLs the JVM of the instance holding the most counting tasks (``1_p``): it leaves
the group without a word, so nothing happens until the broker's session timeout expires it. Then:

- **owned**: from the kill until the survivors' ``tasks`` (polled every 0.1 s) cover every task
  of the topology once and every survivor is RUNNING again;
- **Stable** (``group.protocol=streams`` only): until ``Admin#describeStreamsGroups`` shows the
  group Stable with the survivors only, each holding its target assignment, every task once;
- **output**: until the output topic shows (read_committed) the count of a line produced after the
  kill for a word the killed instance counted (its output partitions are its ``1_p`` tasks'): its
  open transaction must be aborted first (Streams' ``transaction.timeout.ms`` under exactly-once is
  10 s) and the new owner must restore the counts from the changelog.

Then a new instance takes the killed one's place and the group settles again before the next kill.
Both brokers get the compat suite's group settings (``compat_tests.kit.brokers.SUITE_OVERRIDES``):
``group.streams.session.timeout.ms=10000`` (Kafka's lowest allowed value; 45 s by default), 500 ms
streams heartbeats and no initial rebalance delay. The figures are dominated by that session
timeout. ``group.protocol=classic`` runs the same application with the consumers'
``session.timeout.ms`` set to the same 10 s (their heartbeat interval stays the client's 3 s) for
reference. Each broker kind gets one fresh broker for all its kills; the brokers run one after the
other.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition

from bench.launchers import Launcher, RunningBroker, make_launchers, names_of, running
from bench.report import write_json_out
from broker.cli.table import render_table

if TYPE_CHECKING:  # the compat kit is test support: imported when used
    from compat_tests.kit.drivers.java_streams import AppSettings, StreamsInstance

PROTOCOLS = ("streams", "classic")
WORDS = 64
START_S = 180.0
"""A JVM's start and the group's first assignment on a loaded two-core machine."""
SETTLE_S = 120.0
"""How long a kill may take to be absorbed, or a new instance to join."""
POLL_S = 0.1


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench streams-rebalance", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--brokers", default="odradek,apache-kafka", help="from: odradek,apache-kafka")
    parser.add_argument("--protocols", type=protocols_of, default=list(PROTOCOLS),
                        help="group.protocol values, comma-separated (default streams,classic)")  # fmt: skip
    parser.add_argument("--kills", type=int, default=3, help="kills per broker and protocol (default 3)")
    parser.add_argument("--instances", type=int, default=3, help="application instances (default 3)")
    parser.add_argument("--partitions", type=int, default=4, help="source topic partitions (default 4)")
    parser.add_argument("--rate", type=float, default=50.0, help="lines produced per second (default 50)")
    parser.add_argument("--json-out", type=Path, help="also write every kill as JSON")
    return parser.parse_args(argv)


def protocols_of(text: str) -> list[str]:
    """``--protocols``: the names, each one of PROTOCOLS."""
    unknown = [name for name in names_of(text) if name not in PROTOCOLS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown {', '.join(unknown)}; known: {', '.join(PROTOCOLS)}")
    return names_of(text)


def session_timeout_ms() -> int:
    from compat_tests.kit.brokers import SUITE_OVERRIDES

    return int(SUITE_OVERRIDES["group.streams.session.timeout.ms"])


def broker_settings() -> list[str]:
    """The compat suite's group settings, as ``--override-all`` values (both brokers alike)."""
    from compat_tests.kit.brokers import SUITE_OVERRIDES

    return [f"{key}={value}" for key, value in SUITE_OVERRIDES.items()]


class Flow:
    """Lines into the source topic at a steady rate (each with the producer's wall-clock
    timestamp), and the output topic read ``read_committed`` from the moment it is made: each
    record's partition, timestamp and arrival (wall clock, ms)."""

    def __init__(self, broker: RunningBroker, source: str, output: str, partitions: int, rate: float) -> None:
        self.arrivals: list[tuple[int, int, float]] = []
        self._stop = threading.Event()
        self._consumer = Consumer(
            broker.librdkafka(
                **{
                    "group.id": f"{output}-reader",
                    "isolation.level": "read_committed",
                    "enable.auto.commit": False,
                    "log_level": 4,
                }
            )
        )
        self._consumer.assign([TopicPartition(output, p, OFFSET_END) for p in range(partitions)])
        self._producer = Producer(broker.librdkafka(**{"linger.ms": 5, "log_level": 4}))
        self._threads = [
            threading.Thread(target=self._produce, args=(source, partitions, 1 / rate), daemon=True),
            threading.Thread(target=self._read, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _produce(self, source: str, partitions: int, interval_s: float) -> None:
        n = 0
        while not self._stop.wait(interval_s):
            line = " ".join(f"w{(n * 7 + i * 13) % WORDS}" for i in range(5))
            self._producer.produce(source, line.encode(), partition=n % partitions)
            self._producer.poll(0)
            n += 1
        self._producer.flush(10)

    def _read(self) -> None:
        while not self._stop.is_set():
            for message in self._consumer.consume(500, 0.2):
                partition = message.partition()
                if message.error() is None and partition is not None:
                    self.arrivals.append((partition, message.timestamp()[1], time.time() * 1000))

    def first_after(self, partitions: set[int], produced_after_ms: float) -> float | None:
        """When the output first showed a record of ``partitions`` whose line was produced after
        ``produced_after_ms`` (wall clock ms), or None."""
        times = [at for p, ts, at in list(self.arrivals) if p in partitions and ts > produced_after_ms]
        return min(times, default=None)

    def counting_since(self, since_ms: float) -> bool:
        """Whether any output record arrived after ``since_ms``."""
        return any(at > since_ms for _, _, at in list(self.arrivals))

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(15)
        self._consumer.close()


@dataclass
class Kill:
    """One SIGKILL: the killed instance's tasks and the seconds until each mark (None: not seen)."""

    broker: str
    protocol: str
    victim_tasks: list[str]
    owned_s: float | None = None
    stable_s: float | None = None
    output_s: float | None = None


@dataclass
class Group:
    """One application (group) on one broker: its instances, the topics and the flow of lines."""

    broker: RunningBroker
    protocol: str
    partitions: int
    workdir: Path
    instances: list[StreamsInstance] = field(default_factory=list)
    started: int = 0

    @property
    def application_id(self) -> str:
        return f"bench-{self.protocol}"

    @property
    def all_tasks(self) -> set[str]:
        """The word count's tasks: subtopologies 0 (split, re-key) and 1 (count), a task a partition."""
        return {f"{sub}_{p}" for sub in (0, 1) for p in range(self.partitions)}

    def settings(self) -> AppSettings:
        from compat_tests.kit.drivers.java_streams import AppSettings

        classic = session_timeout_ms() if self.protocol == "classic" else None
        return AppSettings(self.application_id, f"{self.application_id}-lines", f"{self.application_id}-counts",
                           group_protocol=self.protocol, classic_session_timeout_ms=classic)  # fmt: skip

    def start_instances(self, count: int) -> None:
        """``count`` more instances, started side by side, each until RUNNING."""
        from compat_tests.kit.drivers.java_streams import StreamsInstance

        new = []
        for _ in range(count):
            self.started += 1
            name = f"{self.protocol}-{self.started}"
            new.append(
                StreamsInstance(self.workdir / f"{name}.log", self.broker.bootstrap, self.workdir / name)
            )
        self.instances += new
        with ThreadPoolExecutor(count) as pool:
            list(pool.map(lambda instance: instance.start(self.settings()), new))
        for instance in new:
            instance.wait_for_state("RUNNING", START_S)

    def owned(self, instances: Sequence[StreamsInstance]) -> bool:
        """Whether ``instances`` hold every task once between them, each RUNNING."""
        held = [task for instance in instances for task in instance.tasks()[0]]
        if sorted(held) != sorted(self.all_tasks):
            return False
        return all(instance.state() == "RUNNING" for instance in instances)

    def stable(self, members: int) -> bool:
        """Whether describeStreamsGroups shows the group Stable with ``members`` members, each
        holding its target assignment, every task held once."""
        from compat_tests.kit.drivers.base import ClientError

        try:
            group = self.instances[0].describe_group(self.application_id)
        except ClientError:  # e.g. while the coordinator moves: not known to be Stable
            return False
        assigned = [task for m in group["members"] for task in m["assignment"]["active"]]
        return (
            group["state"] == "Stable"
            and len(group["members"]) == members
            and all(m["assignment"] == m["target_assignment"] for m in group["members"])
            and sorted(assigned) == sorted(self.all_tasks)
        )

    def settled(self) -> bool:
        if not self.owned(self.instances):
            return False
        return self.protocol != "streams" or self.stable(len(self.instances))

    def wait(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + SETTLE_S
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.broker.name} {self.protocol}: not {what} within {SETTLE_S:.0f}s")
            time.sleep(POLL_S)

    def close(self) -> None:
        for instance in self.instances:
            instance.close()


def kill_one(group: Group, flow: Flow) -> Kill:
    """SIGKILL the instance with the most counting tasks; time the survivors' takeover."""
    tasks = [instance.tasks()[0] for instance in group.instances]
    victim_at = max(range(len(tasks)), key=lambda i: sum(t.startswith("1_") for t in tasks[i]))
    victim = group.instances.pop(victim_at)
    kill = Kill(group.broker.name, group.protocol, sorted(tasks[victim_at]))
    counted = {int(t.split("_")[1]) for t in tasks[victim_at] if t.startswith("1_")}
    killed_ms = time.time() * 1000
    victim.kill()
    deadline = time.monotonic() + SETTLE_S
    while (
        kill.owned_s is None
        or kill.output_s is None
        or (kill.stable_s is None and group.protocol == "streams")
    ):
        if time.monotonic() > deadline:
            raise TimeoutError(f"kill not absorbed within {SETTLE_S:.0f}s: {kill}")
        now_ms = time.time() * 1000
        if kill.owned_s is None and group.owned(group.instances):
            kill.owned_s = (now_ms - killed_ms) / 1000
        if kill.stable_s is None and group.protocol == "streams" and group.stable(len(group.instances)):
            kill.stable_s = (now_ms - killed_ms) / 1000
        if kill.output_s is None and (resumed := flow.first_after(counted, killed_ms)) is not None:
            kill.output_s = (resumed - killed_ms) / 1000
        time.sleep(POLL_S)
    victim.close()
    return kill


def run_protocol(launcher: Launcher, broker: RunningBroker, protocol: str, args: argparse.Namespace,
                 workdir: Path) -> list[Kill]:  # fmt: skip
    from compat_tests.kit.drivers.confluent import ConfluentAdmin

    group = Group(broker, protocol, args.partitions, workdir)
    settings = group.settings()
    admin = ConfluentAdmin(broker.bootstrap)
    try:
        for topic in (settings.source, settings.output):
            admin.create_topic(topic, args.partitions)
    finally:
        admin.close()
    flow = Flow(broker, settings.source, settings.output, args.partitions, args.rate)
    kills = []
    try:
        group.start_instances(args.instances)
        for n in range(1, args.kills + 1):
            group.wait(group.settled, f"settled with {len(group.instances)} instances")
            since_ms = time.time() * 1000
            group.wait(partial(flow.counting_since, since_ms), "counting")
            kill = kill_one(group, flow)
            print(f"  [{n}/{args.kills}] {launcher.name} {protocol}: killed the holder of {','.join(kill.victim_tasks)}: "
                  f"owned {kill.owned_s:.1f}s, Stable {_secs(kill.stable_s)}, output {kill.output_s:.1f}s", flush=True)  # fmt: skip
            kills.append(kill)
            if n < args.kills:
                group.start_instances(1)
    finally:
        group.close()
        flow.close()
    return kills


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def table(kills: Sequence[Kill], brokers: Sequence[str], protocols: Sequence[str]) -> str:
    """Per protocol and broker: the medians and ranges of the kills; odradek/apache-kafka."""
    rows: list[list[object]] = []
    for protocol in protocols:
        medians: dict[str, list[float | None]] = {}
        for broker in brokers:
            mine = [k for k in kills if k.broker == broker and k.protocol == protocol]
            if not mine:
                continue
            row: list[object] = [protocol, broker, len(mine)]
            medians[broker] = []
            for name in ("owned_s", "stable_s", "output_s"):
                values = [getattr(k, name) for k in mine]
                median = _median(values)
                medians[broker].append(median)
                present = [v for v in values if v is not None]
                row.append("-" if median is None else f"{median:.1f} ({min(present):.1f}-{max(present):.1f})")
            rows.append(row)
        if "odradek" in medians and "apache-kafka" in medians:
            ratios = [
                f"{a / b:.2f}x" if a is not None and b else "-"
                for a, b in zip(medians["odradek"], medians["apache-kafka"], strict=True)
            ]
            rows.append([protocol, "odradek/apache-kafka", "", *ratios])
    headers = ["protocol", "broker", "kills", "owned s", "Stable s", "output s"]
    return render_table(headers, rows)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    protocols: list[str] = args.protocols
    launchers = make_launchers(args.brokers, [], broker_settings())
    if not launchers:
        return 2
    print(f"{args.instances} word-count instances (Kafka Streams 4.3.1, exactly_once_v2) on {args.partitions} partitions, "
          f"{args.rate:.0f} lines/s; {args.kills} kills per broker and protocol ({', '.join(protocols)}); "
          f"session timeout {session_timeout_ms()} ms on both brokers; brokers: {', '.join(la.name for la in launchers)}",
          flush=True)  # fmt: skip
    kills: list[Kill] = []
    failures: list[dict[str, str]] = []
    scratch = tempfile.mkdtemp(prefix="bench-streams-rebalance-")  # the JVMs' logs, kept if a trial fails
    for launcher in launchers:
        with running(launcher) as broker:
            for protocol in protocols:
                workdir = Path(scratch) / f"{launcher.name}-{protocol}"
                workdir.mkdir()
                try:
                    kills += run_protocol(launcher, broker, protocol, args, workdir)
                except Exception as exc:
                    print(f"  {launcher.name} {protocol}: FAILED: {exc} (logs in {workdir})", flush=True)
                    failures.append({"broker": launcher.name, "protocol": protocol, "error": str(exc)})
    if not failures:
        shutil.rmtree(scratch)
    print()
    print(table(kills, [la.name for la in launchers], protocols))
    print(f"\nmedian (min-max) seconds from the SIGKILL; session timeout {session_timeout_ms()} ms: owned = the survivors "
          "hold every task and are RUNNING; Stable = describeStreamsGroups agrees; output = a count of a line produced "
          "after the kill shows for a word the killed instance counted (read_committed).")  # fmt: skip
    write_json_out(args, {"kills": [asdict(k) for k in kills], "failures": failures})
    return 1 if failures else 0
