"""A share group's history (KIP-932): a scripted run of three members, checked record by record.

Records are produced to a topic of two partitions; a share group of three members in explicit
acknowledgement mode (kafka-clients 4.4.0's ``KafkaShareConsumer``, each member in a JVM of its
own) consumes them, polled in turn from this one thread. What a member does with each record is
scripted from a seed (:class:`compat_tests.kit.share_history.Script`): it accepts most, releases
some, rejects a few, and for a few scripted deliveries it is killed: it acknowledges the rest of
that poll's records, commits, and its JVM is SIGKILLed holding the crash record; a new member in
a new JVM takes its place. ``share.delivery.count.limit`` is 3.

Every record delivered must carry the value written at its offset. Every poll, acknowledgement
(with the outcome commitSync gave for its partition) and kill is logged, and
:func:`compat_tests.kit.share_history.check` replays the log: each record ends accepted exactly
once or archived, no record is delivered while another member holds it, a delivery count grows
by one per delivery, nothing is lost, and each record ends as the script says. Which member is given what is the broker's and the timing's choice, but each record's fate
depends only on the script, so the final state's fingerprint (records accepted, rejected and
archived, deliveries in all, deliveries ended by a kill, a digest of every record's end) is
computed from the script alone and must be the same for Apache Kafka and Odradek; so must each
partition's lag at the end, 0. Not its start offset: Kafka 4.3.1 may leave it short of the end
(148 and 149 of 150 in one run) though every record before the end is acknowledged or archived,
and where depends on how the records were batched; Odradek moves it to the end.

``--share-history-records N`` (default 300) sets the run's size: a member is killed once per
2,000 records, at least twice.
"""

from __future__ import annotations

import itertools
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from compat_tests.helpers import eventually
from compat_tests.kit.brokers import RunningBroker
from compat_tests.kit.drivers.base import Driver, Message, ProducerSettings
from compat_tests.kit.drivers.java import JavaProcess
from compat_tests.kit.drivers.java_share import Delivery, ShareAdmin, ShareConsumer, share_jvm
from compat_tests.kit.share_history import (
    ACCEPT,
    CRASH,
    RECORDS_PER_KILL,
    REJECT,
    RELEASE,
    Acknowledged,
    Delivered,
    Event,
    Killed,
    Record,
    Script,
    check,
)

SEED = 932
MEMBERS = 3
PARTITIONS = 2
DELIVERY_LIMIT = 3
MAX_RECORDS = 10
"""Records per poll (``max.poll.records`` with ``share.acquire.mode=record_limit``)."""
POLL_S = 0.1
QUIET_S = 1.0
LOCK_MS = 30_000
"""No lock expires in the run: a member holds a record for one step (a poll, its
acknowledgements and a commit), well under a second."""
SECONDS_PER_RECORD = 0.1
"""The run's deadline grows with its records (a 2-core machine shared with other suites)."""


class Member:
    """A share consumer in a JVM of its own, which the run may SIGKILL."""

    def __init__(self, name: str, logs: Path, broker: RunningBroker, group: str, topic: str) -> None:
        self.name = name
        self.jvm = share_jvm(logs / f"{name}.log")
        self.consumer = ShareConsumer(
            self.jvm, broker.bootstrap, group, [topic], explicit=True, max_records=MAX_RECORDS, client_id=name
        )

    def step(self, script: Script, events: list[Event]) -> bool:
        """One poll, each record acknowledged as scripted and committed; killed if the script
        says so for one of them (True then)."""
        batch = self.consumer.poll(POLL_S)
        decisions: list[tuple[Delivery, str]] = []
        for d in batch:
            assert d.value == f"r{d.offset * PARTITIONS + d.partition}".encode(), d
            events.append(Delivered(self.name, d.partition, d.offset, d.delivery_count))
            decisions.append((d, script.decide(d.partition, d.offset, d.delivery_count or 0)))
        for kind in (ACCEPT, RELEASE, REJECT):
            chosen = [d for d, decision in decisions if decision == kind]
            if chosen:
                self.consumer.acknowledge(chosen, kind)
        acknowledged = [(d, decision) for d, decision in decisions if decision != CRASH]
        if acknowledged:
            outcome = self.consumer.commit()
            for d, decision in acknowledged:
                error = outcome.get((d.topic, d.partition), "commitSync named no outcome for the partition")
                events.append(Acknowledged(self.name, d.partition, d.offset, decision, error))
        if len(acknowledged) < len(decisions):
            self.jvm.kill()
            events.append(Killed(self.name))
            return True
        return False


def test_scripted_share_history(
    request: pytest.FixtureRequest,
    broker: RunningBroker,
    admin: Driver,
    share_client: JavaProcess,
    topic: str,
    tmp_path: Path,
) -> None:
    """The scripted run (see the module's docstring): no violation, the script's fingerprint,
    and every partition's lag drained to 0."""
    count = request.config.getoption("--share-history-records")
    kills = max(2, count // RECORDS_PER_KILL)
    admin.create_topic(topic, PARTITIONS)
    group = f"share-{topic}"
    share_admin = ShareAdmin(share_client, broker.bootstrap)
    share_admin.set_group_configs(
        group,
        {
            "share.auto.offset.reset": "earliest",
            "share.delivery.count.limit": str(DELIVERY_LIMIT),
            "share.record.lock.duration.ms": str(LOCK_MS),
        },
    )
    messages = [
        Message(f"r{i}".encode(), key=f"k{i}".encode(), partition=i % PARTITIONS) for i in range(count)
    ]
    admin.produce(topic, messages, ProducerSettings())
    ends = {p: len(range(p, count, PARTITIONS)) for p in range(PARTITIONS)}
    records = {(p, o) for p, end in ends.items() for o in range(end)}
    script = Script.build(SEED, records, kills, DELIVERY_LIMIT)
    expected = script.fingerprint(records)

    started = time.monotonic()
    deadline = started + 60 + SECONDS_PER_RECORD * count
    events: list[Event] = []
    names = itertools.count(1)
    starting = ThreadPoolExecutor(MEMBERS)

    def member() -> Future[Member]:
        """A new member, its JVM started on a thread of its own while the others go on."""
        return starting.submit(Member, f"member-{next(names)}", tmp_path, broker, group, topic)

    slots = [member() for _ in range(MEMBERS)]
    killed = 0
    try:
        ended: set[Record] = set()
        live = _Live(script)
        while len(ended) < len(records):
            assert time.monotonic() < deadline, f"{len(ended)} of {len(records)} records ended in time"
            ready = [(slot, joined.result()) for slot, joined in enumerate(slots) if joined.done()]
            if not ready:
                time.sleep(0.05)
            for slot, m in ready:
                before = len(events)
                if m.step(script, events):
                    killed += 1
                    slots[slot] = member()
                ended |= live.replay(events[before:])
        quiet_until = time.monotonic() + QUIET_S
        while time.monotonic() < quiet_until:
            for joined in slots:
                joined.result().step(script, events)
        ran_s = time.monotonic() - started
        report = check(events, records, script)
        print(
            f"\nshare history on {broker.kind}: {count} records, {killed} members killed, "
            f"{report.fingerprint}, {len(report.violations)} violations, {ran_s:.1f} s"
        )
        assert not report.violations, str(report)
        assert report.fingerprint == expected, (report.fingerprint, expected)

        def drained() -> None:
            offsets = share_admin.offsets(group)
            assert {tp: lag for tp, (_, lag) in offsets.items()} == {(topic, p): 0 for p in ends}, offsets
            assert all(start <= ends[p] for (_, p), (start, _) in offsets.items()), offsets

        eventually(drained)
        for joined in slots:
            joined.result().consumer.close()
    finally:
        starting.shutdown(wait=True)
        for joined in slots:
            if joined.exception() is None:
                joined.result().jvm.stop()


class _Live:
    """Which records have ended, as the events tell while the run goes on (the run's stopping
    condition; :func:`check` judges the whole log afterwards)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.held: dict[str, dict[Record, int]] = {}

    def replay(self, events: list[Event]) -> set[Record]:
        ended: set[Record] = set()
        for event in events:
            if isinstance(event, Delivered):
                self.held.setdefault(event.consumer, {})[event.partition, event.offset] = (
                    event.delivery_count or 0
                )
            elif isinstance(event, Acknowledged):
                record = (event.partition, event.offset)
                count = self.held.get(event.consumer, {}).pop(record, 0)
                if event.error is None and (
                    event.kind in (ACCEPT, REJECT) or count >= self.script.delivery_limit
                ):
                    ended.add(record)
            else:
                for record, count in self.held.pop(event.consumer, {}).items():
                    if count >= self.script.delivery_limit:
                        ended.add(record)
        return ended
