"""Checks what the members of a share group (KIP-932) observed: a scripted run, and a failover.

A share group hands each record to one member at a time: a member that acquired it holds it
until it acknowledges it (ACCEPT, RELEASE, REJECT), its lock expires, or its share session
ends (a member closed or killed). A released record is delivered again with its delivery count
one higher; one released, expired or given back by a killed member at the group's
``share.delivery.count.limit`` is archived, as is a rejected one. So every record of a drained
share-partition ends either accepted once or archived.

The scripted run (:class:`Script`) decides each delivery from a seed: what a member does with
record (partition, offset) on its n-th delivery depends on nothing else, and a member given a
record scripted to crash it acknowledges the rest of that poll's records, commits, and is
killed holding the crash record. Which member gets what, and in which batches, is up to the
broker and the timing; each record's fate is not: :meth:`Script.outcome` predicts it, and
:meth:`Script.fingerprint` the final state, the same for every broker.

:func:`check` replays the events the test logged in the order they happened (the test drives
every member from one thread, so its order is the real one), and reports as violations:

- a record delivered while another delivery of it was still held (**overlap**): given to a
  second member, or to the same one again, before the first hold ended;
- a record delivered again after an ACCEPT or REJECT the broker confirmed (commitSync without
  error), or after it was archived at the delivery limit (**after the end**);
- an ACCEPT confirmed twice (**accepted twice**);
- a delivery count that does not grow by exactly one per delivery, or beyond the limit;
- an acknowledgement the broker refused (no lock can expire in a scripted run: each hold lasts
  one step, far shorter than its lock);
- a record never finished (**lost**: never delivered, or not accepted nor archived), or whose
  end differs from the script's.

:func:`check_failover` judges a run across broker failures, where acknowledgements may be
refused and records delivered again: only that no record is delivered after its ACCEPT was
confirmed, and that every record was accepted.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

ACCEPT = "ACCEPT"
RELEASE = "RELEASE"
REJECT = "REJECT"
CRASH = "CRASH"
"""The member dies holding the record: SIGKILLed before acknowledging it."""

ACCEPTED = "accepted"
REJECTED = "rejected"
ARCHIVED = "archived at the delivery limit"

Record = tuple[int, int]
"""(partition, offset)."""
CI_RECORDS = 300
"""The scripted run's records in CI (``--share-history-records``; 20,000 for the long mode)."""
RECORDS_PER_KILL = 2000
"""A member is killed once per this many records, and at least twice."""


@dataclass(frozen=True)
class Delivered:
    """A poll of ``consumer`` returned the record with this delivery count."""

    consumer: str
    partition: int
    offset: int
    delivery_count: int | None


@dataclass(frozen=True)
class Acknowledged:
    """``consumer`` acknowledged the record (``kind``) and commitSync answered for its partition:
    ``error`` None when the broker confirmed it."""

    consumer: str
    partition: int
    offset: int
    kind: str
    error: str | None


@dataclass(frozen=True)
class Killed:
    """``consumer``'s process was SIGKILLed: whatever it held goes back to the broker."""

    consumer: str


Event = Delivered | Acknowledged | Killed


@dataclass(frozen=True)
class Script:
    """Each delivery's decision, from a seed: ``release`` and ``reject`` are the shares of
    deliveries released and rejected (the rest accepted), ``crashes`` the deliveries (partition,
    offset, delivery count) on which the member holding them is killed."""

    seed: int
    delivery_limit: int
    release: float
    reject: float
    crashes: frozenset[tuple[int, int, int]]

    @classmethod
    def build(
        cls,
        seed: int,
        records: Iterable[Record],
        kills: int,
        delivery_limit: int = 3,
        release: float = 0.25,
        reject: float = 0.05,
    ) -> Script:
        """A script whose first crash, where some record's path gets there, falls on a record's
        last allowed delivery (killed there, it is archived), and the others on first deliveries."""
        plain = cls(seed, delivery_limit, release, reject, frozenset())
        ordered = sorted(records)
        chosen = random.Random(f"{seed}:crashes").sample(ordered, min(kills, len(ordered)))
        crashes: set[tuple[int, int, int]] = set()
        last = next(
            (r for r in ordered if plain.path(*r)[-1] == RELEASE and len(plain.path(*r)) == delivery_limit),
            None,
        )
        if last is not None and chosen:
            crashes.add((*last, delivery_limit))
            chosen = [r for r in chosen if r != last][: len(chosen) - 1]
        crashes.update((p, o, 1) for p, o in chosen)
        return cls(seed, delivery_limit, release, reject, frozenset(crashes))

    def decide(self, partition: int, offset: int, delivery_count: int) -> str:
        """What a member does with the record on this delivery."""
        if (partition, offset, delivery_count) in self.crashes:
            return CRASH
        draw = random.Random(f"{self.seed}:{partition}:{offset}:{delivery_count}").random()
        if draw < self.reject:
            return REJECT
        return RELEASE if draw < self.reject + self.release else ACCEPT

    def path(self, partition: int, offset: int) -> list[str]:
        """The decisions of the record's deliveries, from the first to its end."""
        decisions = []
        for delivery_count in range(1, self.delivery_limit + 1):
            decision = self.decide(partition, offset, delivery_count)
            decisions.append(decision)
            if decision in (ACCEPT, REJECT):
                break
        return decisions

    def outcome(self, partition: int, offset: int) -> tuple[str, int]:
        """How the record ends, and on which delivery."""
        path = self.path(partition, offset)
        ending = {ACCEPT: ACCEPTED, REJECT: REJECTED}.get(path[-1], ARCHIVED)
        return ending, len(path)

    def fingerprint(self, records: Iterable[Record]) -> Fingerprint:
        """The final state the script leads to, whichever broker ran it."""
        return Fingerprint.of({r: self.outcome(*r) for r in records}, crashed=len(self.crashes))


@dataclass(frozen=True)
class Fingerprint:
    """A run's final state: how many records ended which way, deliveries and kills in all, and
    a digest of every record's end (how, and on which delivery)."""

    records: int
    accepted: int
    rejected: int
    archived: int
    deliveries: int
    crashed: int
    """Deliveries ended by the member's kill."""
    digest: str

    @classmethod
    def of(cls, outcomes: Mapping[Record, tuple[str, int]], crashed: int) -> Fingerprint:
        counts = Counter(ending for ending, _ in outcomes.values())
        text = ";".join(f"{p}:{o}:{e}:{n}" for (p, o), (e, n) in sorted(outcomes.items()))
        return cls(
            records=len(outcomes),
            accepted=counts[ACCEPTED],
            rejected=counts[REJECTED],
            archived=counts[ARCHIVED],
            deliveries=sum(n for _, n in outcomes.values()),
            crashed=crashed,
            digest=hashlib.sha256(text.encode()).hexdigest()[:16],
        )


def _listed(violations: list[str], most: int = 30) -> str:
    """``violations``, one a line, the first ``most`` of them."""
    more = f"\n  ... {len(violations) - most} more" if len(violations) > most else ""
    return f"{len(violations)} violations" + "".join(f"\n  {v}" for v in violations[:most]) + more


@dataclass
class Report:
    """What :func:`check` found: each record's end, the run's fingerprint and its violations."""

    outcomes: dict[Record, tuple[str, int]]
    fingerprint: Fingerprint
    deliveries: int
    violations: list[str]

    def __str__(self) -> str:
        return f"{self.fingerprint}, {_listed(self.violations)}"


@dataclass
class _Record:
    holder: str | None = None
    delivery_count: int = 0
    ended: tuple[str, int] | None = None


def check(events: Sequence[Event], records: Iterable[Record], script: Script) -> Report:
    """Replay a scripted run's events (see the module's docstring)."""
    states = {r: _Record() for r in records}
    violations: list[str] = []
    crashed = 0
    deliveries = 0

    def state_of(partition: int, offset: int) -> _Record:
        if (partition, offset) not in states:
            violations.append(f"{partition}:{offset} was delivered but never produced")
            states[partition, offset] = _Record()
        return states[partition, offset]

    for event in events:
        if isinstance(event, Delivered):
            deliveries += 1
            name = f"{event.partition}:{event.offset}"
            record = state_of(event.partition, event.offset)
            if record.ended is not None:
                violations.append(f"{name} delivered to {event.consumer} after it was {record.ended[0]}")
            if record.holder is not None:
                violations.append(
                    f"{name} delivered to {event.consumer} while {record.holder} held it (overlap)"
                )
            if event.delivery_count != record.delivery_count + 1:
                violations.append(
                    f"{name} delivered to {event.consumer} with delivery count {event.delivery_count} "
                    f"after {record.delivery_count}"
                )
            if event.delivery_count is not None and event.delivery_count > script.delivery_limit:
                violations.append(f"{name} delivered beyond the limit: {event.delivery_count}")
            record.holder = event.consumer
            record.delivery_count = event.delivery_count or record.delivery_count + 1
        elif isinstance(event, Acknowledged):
            name = f"{event.partition}:{event.offset}"
            record = state_of(event.partition, event.offset)
            if record.holder != event.consumer:
                violations.append(f"{name} acknowledged by {event.consumer}, held by {record.holder}")
            record.holder = None
            if event.error is not None:
                violations.append(f"{name}: {event.consumer}'s {event.kind} refused: {event.error}")
            elif event.kind == ACCEPT:
                if record.ended is not None and record.ended[0] == ACCEPTED:
                    violations.append(f"{name} accepted twice (by {event.consumer})")
                record.ended = (ACCEPTED, record.delivery_count)
            elif event.kind == REJECT:
                record.ended = (REJECTED, record.delivery_count)
            elif record.delivery_count >= script.delivery_limit:
                record.ended = (ARCHIVED, record.delivery_count)
        else:
            for record in states.values():
                if record.holder == event.consumer:
                    crashed += 1
                    record.holder = None
                    if record.delivery_count >= script.delivery_limit:
                        record.ended = (ARCHIVED, record.delivery_count)
    outcomes: dict[Record, tuple[str, int]] = {}
    for (partition, offset), record in sorted(states.items()):
        name = f"{partition}:{offset}"
        if record.ended is None:
            held = f", held by {record.holder}" if record.holder else ""
            violations.append(
                f"{name} lost: {record.delivery_count} deliveries, neither accepted nor archived{held}"
            )
            continue
        outcomes[partition, offset] = record.ended
        expected = script.outcome(partition, offset)
        if record.ended != expected:
            violations.append(f"{name} ended {record.ended}, the script says {expected}")
    return Report(outcomes, Fingerprint.of(outcomes, crashed), deliveries, violations)


@dataclass
class FailoverReport:
    """What :func:`check_failover` found."""

    accepted: int
    deliveries: int
    redelivered: int
    """Deliveries of a record given before (its earlier acknowledgement refused or never sent)."""
    refused: int
    """Acknowledgements the broker refused or never answered (a leader gone)."""
    violations: list[str]

    def __str__(self) -> str:
        return (
            f"{self.accepted} accepted, {self.deliveries} deliveries ({self.redelivered} again), "
            f"{self.refused} acknowledgements refused; {_listed(self.violations)}"
        )


def check_failover(events: Sequence[Event], records: Iterable[Record]) -> FailoverReport:
    """Every record accepted (an ACCEPT the broker confirmed), and none delivered after that."""
    confirmed: set[Record] = set()
    seen: set[Record] = set()
    violations: list[str] = []
    deliveries = redelivered = refused = 0
    for event in events:
        record = (event.partition, event.offset) if not isinstance(event, Killed) else None
        if isinstance(event, Delivered) and record is not None:
            deliveries += 1
            redelivered += record in seen
            seen.add(record)
            if record in confirmed:
                violations.append(
                    f"{record[0]}:{record[1]} delivered to {event.consumer} (delivery count "
                    f"{event.delivery_count}) after its ACCEPT was confirmed"
                )
        elif isinstance(event, Acknowledged) and record is not None:
            if event.error is not None:
                refused += 1
            elif event.kind == ACCEPT:
                confirmed.add(record)
    lost = sorted(set(records) - confirmed)
    if lost:
        violations.append(f"{len(lost)} records never accepted: {lost[:20]}")
    return FailoverReport(len(confirmed), deliveries, redelivered, refused, violations)
