"""``python -m bench share-consumers``: records/s a share group (KIP-932) of Java consumers reads.

Issue 26's benchmark: one share group of 4 consumers on a topic of 1 partition (the members share
it: the broker hands each a different batch of acquired records) and of 4 partitions (one each,
once the group has settled). Only the Java client has a share consumer, so the group runs in one
JVM, one thread per member (``bench/java/ShareThroughput.java``, against kafka-clients
``SHARE_CLIENT_VERSION``): implicit acknowledgement and the client's defaults otherwise. The JVM
has the full JIT, like the Kafka broker the launchers start, and its CPU is reported beside the
broker's, so a run where the client was the bottleneck shows as such.

Each (case, broker) gets a fresh broker (``bench.launchers.running``): the topic is created and
filled first by ``bench.load produce`` (the throughput bench's tuned producer, 1 KiB values),
then the group's ``share.auto.offset.reset`` is set to ``earliest`` and the consumers start. The
window is timed inside the JVM from the moment every member has received a record (members join
over the heartbeat interval, 5 s by default on both brokers, which would otherwise be counted as
broker time) for ``--seconds``, or until every record has been delivered once if that comes first;
records delivered again (an acquisition released or timed out) are counted apart. Brokers take turns within each case and
repeat, so drift on the shared machine hits them alike. Tansu has no share groups and is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from bench.launchers import (
    Launcher,
    RunningBroker,
    add_build_option,
    builds_of,
    make_launchers,
    names_of,
    running,
)
from bench.report import add_trial_options, write_json_out
from bench.throughput import REPO_ROOT, Settings, create_topic, run_phase
from compat_tests.kit.procstat import cpu_seconds, machine_busy_seconds

SOURCE = REPO_ROOT / "bench" / "java" / "ShareThroughput.java"
NO_SHARE_GROUPS = {
    "tansu": "Tansu 0.6.0 has no share groups (KIP-932): it does not answer ShareGroupHeartbeat"
}
WARMUP_S = 20.0
"""How long after the first record the window waits for every member to receive one."""
CLIENT_JVM = ["java", "-Xms256m", "-Xmx1g", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"]


@dataclass(frozen=True)
class Case:
    consumers: int
    partitions: int

    @property
    def label(self) -> str:
        return f"{self.consumers}c x {self.partitions}p"


def parse_cases(text: str) -> list[Case]:
    """``4x1,4x4``: consumers x partitions."""
    cases = []
    for item in names_of(text):
        consumers, _, partitions = item.partition("x")
        cases.append(Case(int(consumers), int(partitions)))
    return cases


@dataclass
class ShareTrial:
    """One case on one fresh broker: what the JVM counted and the processes' CPU over its window."""

    broker: str
    case: str
    records: int = 0
    window_seconds: float = 0.0
    window_records: int = 0
    window_deliveries: int = 0
    warmup_seconds: float = 0.0
    window_per_consumer: list[int] = field(default_factory=list)
    broker_cpu_seconds: float = 0.0
    client_cpu_seconds: float = 0.0
    machine_cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    """The harness's own clock between the ``window`` and ``done`` lines (for the cores)."""

    @property
    def records_per_s(self) -> float:
        return self.window_records / self.window_seconds

    @property
    def broker_cpu_us_per_record(self) -> float:
        return self.broker_cpu_seconds / self.window_records * 1e6

    @property
    def broker_cores(self) -> float:
        return self.broker_cpu_seconds / self.wall_seconds

    @property
    def client_cores(self) -> float:
        return self.client_cpu_seconds / self.wall_seconds

    @property
    def other_cores(self) -> float:
        others = self.machine_cpu_seconds - self.broker_cpu_seconds - self.client_cpu_seconds
        return max(0.0, others) / self.wall_seconds

    @property
    def redelivered(self) -> int:
        return self.window_deliveries - self.window_records

    @property
    def active_consumers(self) -> int:
        return sum(1 for count in self.window_per_consumer if count)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench share-consumers", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--brokers", default="odradek,apache-kafka", help="from: odradek,apache-kafka,odradek@LABEL"
    )
    parser.add_argument(
        "--cases", default="4x1,4x4", help="consumers x partitions, comma-separated (default 4x1,4x4)"
    )
    parser.add_argument(
        "--records", type=int, default=400_000, help="records in the topic per case (default 400000)"
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="the timed window's length (default 10)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for odradek serve (repeatable)")  # fmt: skip
    parser.add_argument("--override-all", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for Odradek and Apache Kafka alike (repeatable)")  # fmt: skip
    add_trial_options(parser)
    add_build_option(parser)
    return parser.parse_args(argv)


def client_classpath() -> str:
    """ShareThroughput compiled against the share consumer's kafka-clients (cached by its hash)."""
    from compat_tests.kit.drivers.java import _client_jars
    from compat_tests.kit.drivers.java_share import SHARE_CLIENT_VERSION
    from compat_tests.maven import classpath, compiled_classes

    libs = _client_jars(SHARE_CLIENT_VERSION)
    return classpath(compiled_classes(SOURCE, libs, f"kafka-clients-{SHARE_CLIENT_VERSION}"), libs)


class _Lines:
    """The JVM's stdout lines, read on a thread so every wait on them is bounded."""

    def __init__(self, stream: IO[str]) -> None:
        self._lines: list[str] = []
        self._ready = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self._ready:
                self._lines.append(line.rstrip("\n"))
                self._ready.notify_all()
        with self._ready:
            self._lines.append("")  # end of output
            self._ready.notify_all()

    def next(self, deadline: float) -> str:
        with self._ready:
            while not self._lines:
                if not self._ready.wait(max(0.0, deadline - time.monotonic())):
                    raise TimeoutError("the share consumers' JVM said nothing in time")
            return self._lines.pop(0)


def consume(
    broker: RunningBroker, case: Case, settings: Settings, window_s: float, classpath: str, log: Path
) -> ShareTrial:
    """Run the share group's JVM against ``broker``; CPU is read when it says ``window`` and ``done``."""
    argv = [*CLIENT_JVM, "-cp", classpath, "ShareThroughput", broker.bootstrap, "share-bench", settings.topic]
    argv += [
        str(case.consumers),
        str(settings.messages),
        str(int(WARMUP_S * 1000)),
        str(int(window_s * 1000)),
    ]
    argv.append(str(int(settings.phase_timeout_s * 1000)))
    deadline = time.monotonic() + settings.phase_timeout_s + 60
    with log.open("a") as stderr:
        jvm = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        assert jvm.stdout is not None
        lines = _Lines(jvm.stdout)
        marks: dict[str, tuple[float, float, float, float]] = {}
        while (line := lines.next(deadline)).split(" ", 1)[0] in ("window", "done"):
            marks[line] = (
                time.monotonic(),
                cpu_seconds(broker.pids),
                cpu_seconds([jvm.pid]),
                machine_busy_seconds(),
            )
        if not line.startswith("result ") or "window" not in marks or "done" not in marks:
            raise RuntimeError(f"the share consumers did not finish: {line or 'no result'} (see {log})")
        result: dict[str, Any] = json.loads(line.removeprefix("result "))
        if not result["complete"] or result["error"]:
            raise RuntimeError(f"the share consumers failed: {result['error']} ({result['records']} records)")
        (t0, b0, c0, m0), (t1, b1, c1, m1) = marks["window"], marks["done"]
        trial = ShareTrial(broker.name, case.label, wall_seconds=t1 - t0, broker_cpu_seconds=b1 - b0,
                           client_cpu_seconds=c1 - c0, machine_cpu_seconds=m1 - m0)  # fmt: skip
        for key in ("records", "window_seconds", "window_records", "window_deliveries", "warmup_seconds",
                    "window_per_consumer"):  # fmt: skip
            setattr(trial, key, result[key])
        if trial.window_records == 0:
            raise RuntimeError(
                f"every record arrived before all {case.consumers} members did: use more --records"
            )
        return trial
    finally:
        if jvm.poll() is None:
            jvm.kill()
        jvm.wait()


def run_case(
    launcher: Launcher, case: Case, args: argparse.Namespace, classpath: str, log: Path
) -> ShareTrial:
    settings = Settings(args.records, args.value_size, case.partitions, topic="share-bench",
                        phase_timeout_s=args.phase_timeout)  # fmt: skip
    with running(launcher) as broker:
        create_topic(broker, settings)
        run_phase(broker, "produce", settings)
        return consume(broker, case, settings, args.seconds, classpath, log)


def _pick(how: str) -> Callable[[list[float]], float]:
    return max if how == "best" else statistics.median


COLUMNS: list[tuple[str, Callable[[Sequence[ShareTrial], str], float], str]] = [
    ("records/s", lambda ts, how: _pick(how)([t.records_per_s for t in ts]), ".0f"),
    (
        "broker CPU us/record",
        lambda ts, how: statistics.median([t.broker_cpu_us_per_record for t in ts]),
        ".1f",
    ),
    ("broker cores", lambda ts, how: statistics.median([t.broker_cores for t in ts]), ".2f"),
    ("client cores", lambda ts, how: statistics.median([t.client_cores for t in ts]), ".2f"),
    ("others' cores", lambda ts, how: statistics.median([t.other_cores for t in ts]), ".2f"),
    ("window s", lambda ts, how: statistics.median([t.window_seconds for t in ts]), ".1f"),
    ("warm-up s", lambda ts, how: statistics.median([t.warmup_seconds for t in ts]), ".1f"),
    ("active", lambda ts, how: min(t.active_consumers for t in ts), ".0f"),
    ("redelivered", lambda ts, how: max(t.redelivered for t in ts), ".0f"),
]
COMPARED = ("records/s", "broker CPU us/record")


def table(trials: dict[tuple[str, str], list[ShareTrial]], cases: Sequence[Case], brokers: Sequence[str],
          how: str, reference: str) -> str:  # fmt: skip
    """One row per case and broker (the ``how`` of its repeats), and per case odradek/reference."""
    rows = [["case", "broker", "runs", *(header for header, _, _ in COLUMNS)]]
    for case in cases:
        figures: dict[str, dict[str, float]] = {}
        for broker in brokers:
            ts = trials.get((case.label, broker), [])
            if ts:
                figures[broker] = {header: summary(ts, how) for header, summary, _ in COLUMNS}
                rows.append([case.label, broker, str(len(ts)),
                             *(f"{figures[broker][h]:{fmt}}" for h, _, fmt in COLUMNS)])  # fmt: skip
        if "odradek" in figures and reference in figures:
            num, den = figures["odradek"], figures[reference]
            rows.append([case.label, f"odradek/{reference}", "",
                         *(f"{num[h] / den[h]:.2f}x" if h in COMPARED else "" for h, _, _ in COLUMNS)])  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append(
            "  ".join(
                c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cases = parse_cases(args.cases)
    names = names_of(args.brokers)
    for name in names:
        if name in NO_SHARE_GROUPS:
            print(f"skipping {name}: {NO_SHARE_GROUPS[name]}", file=sys.stderr)
    wanted = ",".join(name for name in names if name not in NO_SHARE_GROUPS)
    launchers = make_launchers(wanted, args.override, args.override_all, builds=builds_of(args))
    if not launchers:
        return 2
    classpath = client_classpath()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-share-consumers-{os.getpid()}.log"
    print(f"{args.records} records x {args.value_size} B per case, {args.seconds:.0f} s windows; cases: {', '.join(c.label for c in cases)}; "
          f"brokers: {', '.join(la.name for la in launchers)}; client JVM log: {log}", flush=True)  # fmt: skip
    trials: dict[tuple[str, str], list[ShareTrial]] = {}
    failures: list[dict[str, str]] = []
    for rep in range(1, args.repeat + 1):
        for case in cases:
            for launcher in launchers:
                tag = f"[{rep}/{args.repeat}] {case.label} {launcher.name}"
                print(f"{tag}: starting", flush=True)
                try:
                    trial = run_case(launcher, case, args, classpath, log)
                except Exception as exc:
                    print(f"{tag}: FAILED: {exc}", flush=True)
                    failures.append({"broker": launcher.name, "case": case.label, "error": str(exc)})
                    continue
                trials.setdefault((case.label, launcher.name), []).append(trial)
                print(f"{tag}: {trial.records_per_s:.0f} records/s over {trial.window_seconds:.1f}s, "
                      f"broker {trial.broker_cores:.2f} cores, client {trial.client_cores:.2f}, "
                      f"others {trial.other_cores:.2f}, per consumer {trial.window_per_consumer}", flush=True)  # fmt: skip
    brokers = [la.name for la in launchers]
    reference = next((name for name in brokers if name != "odradek"), "apache-kafka")
    print()
    print(table(trials, cases, brokers, args.summary, reference))
    print(f"\n{args.summary} of {args.repeat} run(s); window = from every member's first record, "
          f"{args.seconds:.0f} s or until every record was delivered once; cores = CPU seconds / wall seconds over the window; others' cores = the rest of the machine "
          "(noise).")  # fmt: skip
    all_trials = [asdict(t) | {"records_per_s": t.records_per_s} for ts in trials.values() for t in ts]
    write_json_out(args, {"trials": all_trials, "failures": failures})
    return 1 if failures else 0
