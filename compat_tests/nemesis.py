"""The nemesis: one fault per round, injected into a proxied cluster while the chaos workload runs
(:mod:`compat_tests.chaos`: two idempotent acks=all producers and a consumer group), healed at
the end of the round, and the whole history checked once every replica is in sync again.

The faults (:data:`FAULTS`), each against a three-node Odradek on etcd and a three-node Apache
Kafka alike where it means something for both:

- ``leader-partitioned``: a partition's leader cut from its followers (its inter-broker links
  held both ways) while it still reaches its metadata quorum and its clients: it must shrink the
  ISR to itself and then refuse acks=all writes (``min.insync.replicas=2``), not acknowledge
  what no follower has;
- ``cut-from-metadata``: a leader cut from etcd (Odradek) or from the controller quorum (Kafka)
  while it still reaches its followers and clients: it is declared dead and replaced, and must
  not acknowledge writes its followers, now following the new leader, no longer fetch;
- ``leader-paused``: a leader SIGSTOPped past its session timeout, replaced, then resumed (a long
  GC pause): it must step down, not acknowledge on its stale leadership;
- ``metadata-quorum-lost``: Odradek: one etcd member killed, then a second (no quorum), both
  restarted; Kafka, whose combined nodes carry the quorum in the broker processes (stopping two
  controllers would stop two brokers, ``test_cluster_failover.py`` does that): every controller
  link held, so no quorum while every broker still runs. Brokers keep serving without metadata;
- ``disk-full``: the log directory (a tmpfs of its own) of a node that leads the watched
  partition and follows the others filled to the last page, then freed; its leadership must move
  to an in-sync follower (Odradek hands it over, Kafka stops a broker whose only log directory
  fails), and a node that stopped over it is started again;
- ``slow-disk``: not available here (:data:`SLOW_DISK_UNAVAILABLE`).

Each round prints one line (:class:`Round`): the fault, the watched partition's leader and ISR
as they changed meanwhile, its longest time without an acknowledged write (the failover time
where leadership moved, the fault's length where writes had to wait for the heal), and the
history's summary (records acknowledged and read, and what is wrong with them: nothing).
"""

from __future__ import annotations

import contextlib
import struct
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from confluent_kafka import ElectionType, TopicPartition

from compat_tests.chaos import FAILOVER_TIMEOUT_S, RECOVERY_TIMEOUT_S, Workload, read_all
from compat_tests.helpers import eventually
from compat_tests.kit.history import Acked, Batch, Report, check, places_of, repeated_places
from compat_tests.kit.proxied_clusters import NemesisCluster
from compat_tests.kit.record_writers import writers_at
from compat_tests.kit.replica_logs import replica_batches
from compat_tests.topic_metadata import PartitionState, topic_partitions

NEMESIS_OVERRIDES: Mapping[str, str] = {"replica.lag.time.max.ms": "8000"}
"""A follower that fetches nothing for 8 s leaves the ISR (Kafka's default 30 s would make the
partitioned leader's round last half a minute longer)."""
HOLD_S = 12.0
"""How long a fault lasts: past the session timeout (4 s, ``clusters.LIVENESS``), so a cut or
paused leader is replaced, and past the replica lag time, so a partitioned one shrinks its ISR."""
STEP_S = 4.0
"""Between killing one etcd member and the second: the brokers work on with two of three."""
GROUP_CONVERGENCE_S = 120.0
"""Bound on the group being given every acknowledged record once the cluster is in sync."""
SLOW_DISK_UNAVAILABLE = (
    "slow-disk: skipped, no portable way to slow one node's disk: dm-delay needs root and the "
    "kernel's device-mapper (containers and CI runners rarely have it; the development machine "
    "has none), and a FUSE pass-through would slow every file operation of the node (Kafka maps "
    "its index files) rather than model a slow device"
)


@dataclass
class Round:
    """What a round did and saw (times in seconds from the fault's start)."""

    fault: str
    what: str
    partition: int
    seen: list[str] = field(default_factory=list)
    """The watched partition's leader and ISR at the start and at each change during the fault,
    as a node the fault did not hit reported them."""
    healed_after_s: float = 0.0
    longest_gap_s: float = 0.0
    """The longest time, from the fault's start until produces succeed again after healing, in
    which no record of the watched partition was acknowledged: the failover time where the
    leadership moved, the fault's length where writes had to wait for the heal."""

    def __str__(self) -> str:
        return (
            f"{self.fault}: {self.what}, healed after {self.healed_after_s:.1f} s; partition "
            f"{self.partition} ({'; '.join(self.seen)}) had no acknowledgement for "
            f"{self.longest_gap_s:.1f} s at most"
        )


class Fault(ABC):
    """One kind of fault: how to inject it and how to heal it."""

    name: str

    def watched(self, target: NemesisCluster, topic: str, preferred: int) -> int:
        """The partition whose produce the round measures: ``preferred`` unless the fault needs
        another."""
        return preferred

    @abstractmethod
    def inject(self, target: NemesisCluster, leader: int) -> str:
        """Begin the fault (``leader`` leads the watched partition); return what it hit."""

    @abstractmethod
    def heal(self, target: NemesisCluster) -> None:
        """End the fault: everything it stopped or cut works again (also after a failed inject)."""


class LeaderPartitioned(Fault):
    name = "leader-partitioned"

    def inject(self, target: NemesisCluster, leader: int) -> str:
        target.network.cut_replication(leader)
        return f"node {leader} cut from the other brokers"

    def heal(self, target: NemesisCluster) -> None:
        target.network.heal()


class CutFromMetadata(Fault):
    name = "cut-from-metadata"

    def inject(self, target: NemesisCluster, leader: int) -> str:
        target.network.cut_metadata(leader)
        quorum = "etcd" if target.etcd is not None else "the controller quorum"
        return f"node {leader} cut from {quorum}"

    def heal(self, target: NemesisCluster) -> None:
        target.network.heal()


class LeaderPaused(Fault):
    name = "leader-paused"

    def __init__(self) -> None:
        self._paused: int | None = None

    def inject(self, target: NemesisCluster, leader: int) -> str:
        target.cluster.pause(leader)
        self._paused = leader
        return f"node {leader} SIGSTOPped"

    def heal(self, target: NemesisCluster) -> None:
        if self._paused is not None:
            target.cluster.resume(self._paused)
        self._paused = None


class MetadataQuorumLost(Fault):
    name = "metadata-quorum-lost"

    def __init__(self) -> None:
        self._killed: list[int] = []
        self._rounds = 0

    def inject(self, target: NemesisCluster, leader: int) -> str:
        if target.etcd is None:
            target.network.cut_all_metadata()
            return "every controller link cut"
        first, second = self._rounds % 3, (self._rounds + 1) % 3
        self._rounds += 1
        target.etcd.kill(first)
        self._killed = [first]
        time.sleep(STEP_S)
        target.etcd.kill(second)
        self._killed.append(second)
        return f"etcd member {first} killed, {STEP_S:.0f} s later member {second}"

    def heal(self, target: NemesisCluster) -> None:
        target.network.heal()
        while target.etcd is not None and self._killed:
            target.etcd.restart(self._killed.pop())


class DiskFull(Fault):
    name = "disk-full"

    def watched(self, target: NemesisCluster, topic: str, preferred: int) -> int:
        """A partition the full node leads (it follows the others), so that the round sees the
        leadership leave the full disk: one it leads already, else one whose preferred leader it
        is, elected (``preferred`` if neither can be had)."""
        node = target.disk_node
        states = target.cluster.partitions(topic)
        led = sorted(p for p, state in states.items() if state.leader == node)
        if led:
            return led[0]
        first = sorted(p for p, s in states.items() if s.replicas[:1] == (node,) and node in s.isr)
        if not first:
            return preferred
        admin = target.cluster.admin()
        admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, first[0])]).result(timeout=30)

        def elected() -> None:
            assert target.cluster.leader_of(topic, first[0]) == node, f"{topic}-{first[0]} not led by {node}"

        eventually(elected, timeout_s=FAILOVER_TIMEOUT_S, interval_s=0.2)
        return first[0]

    def inject(self, target: NemesisCluster, leader: int) -> str:
        assert target.disk is not None
        filled = target.disk.fill()
        return f"node {target.disk_node}'s disk filled ({filled // (1 << 20)} MiB)"

    def heal(self, target: NemesisCluster) -> None:
        assert target.disk is not None and target.disk_node is not None
        target.disk.free()
        if not target.cluster.members[target.disk_node].running():
            target.cluster.start(target.disk_node)


FAULTS: tuple[type[Fault], ...] = (
    LeaderPartitioned,
    CutFromMetadata,
    LeaderPaused,
    MetadataQuorumLost,
    DiskFull,
)
"""Every fault that can run here, in the order the rounds take them."""


def plan(target: NemesisCluster, disk_unavailable: str | None) -> tuple[list[Fault], list[str]]:
    """The faults that can run against ``target``, and why each other one cannot;
    ``disk_unavailable`` says why no node could get a small disk."""
    chosen = [kind() for kind in FAULTS if kind is not DiskFull or target.disk is not None]
    skipped = [SLOW_DISK_UNAVAILABLE]
    if target.disk is None:
        reason = disk_unavailable or "no node is on a small disk"
        skipped.insert(0, f"{DiskFull.name}: skipped, {reason}")
    return chosen, skipped


def wait_until_in_sync(target: NemesisCluster, topics: Sequence[str]) -> None:
    """Every node runs and every node's Metadata lists all nodes and, for each partition of
    ``topics``, the same live leader and every replica in sync: a node just cut off may still
    tell a stale story, so each is asked."""
    cluster = target.cluster
    cluster.wait_all_registered()

    def in_sync() -> None:
        views: dict[int, dict[str, dict[int, PartitionState]]] = {
            node: {topic: topic_partitions(address, topic) for topic in topics}
            for node, address in cluster.nodes.items()
        }
        first = next(iter(views.values()))
        for node, view in views.items():
            assert view == first, f"node {node} sees {view}, not {first}"
        for topic, partitions in first.items():
            assert partitions, f"no node knows {topic}"
            for partition, state in partitions.items():
                assert state.leader in cluster.live(), f"{topic}-{partition} leader {state.leader}"
                assert set(state.isr) == set(state.replicas), f"{topic}-{partition}: {state}"

    eventually(in_sync, timeout_s=RECOVERY_TIMEOUT_S, interval_s=0.5)


def history(target: NemesisCluster, work: Workload, acked: list[Acked]) -> Report:
    """The history so far: everything read back, the writers of repeated records, every
    replica's batches, what the group was given; once the group has every acknowledged record
    (or :data:`GROUP_CONVERGENCE_S` has passed)."""
    cluster = target.cluster
    partitions = work.producers[0].partitions
    with contextlib.suppress(AssertionError):  # the report names what the group was not given
        eventually(lambda: _none_missing(work, acked), timeout_s=GROUP_CONVERGENCE_S, interval_s=1)
    read = read_all(cluster.bootstrap, work.topic, partitions)

    def batches(address: str) -> list[Batch]:
        try:
            return [b for p in range(partitions) for b in replica_batches(address, work.topic, p)]
        except OSError as exc:
            raise AssertionError(f"{address}: {exc}") from exc

    replicas = {node: eventually(lambda a=address: batches(a)) for node, address in cluster.nodes.items()}
    places = places_of(read)
    writers = writers_at(cluster.bootstrap, work.topic, repeated_places(places))
    return check(acked, read, writers, replicas=replicas, consumed=work.group.given(), places=places)


def _none_missing(work: Workload, acked: list[Acked]) -> None:
    missing = work.group.missing(acked)
    assert not missing, f"the group has not been given {len(missing)} records, e.g. {missing[:3]}"


def run_round(work: Workload, target: NemesisCluster, fault: Fault, partition: int) -> Round:
    """Inject ``fault`` with the leader of ``partition`` (or the partition the fault watches)
    in sight, hold it :data:`HOLD_S` watching that partition, heal it, and wait until the cluster
    is in sync and a record sent to that partition since the fault began is acknowledged."""
    cluster = target.cluster
    topics = [work.topic, "__consumer_offsets"]
    wait_until_in_sync(target, topics)
    watched = fault.watched(target, work.topic, partition)
    leader = cluster.leader_of(work.topic, watched)
    observer = min(n for n in cluster.nodes if n not in (leader, target.disk_node))
    began = time.monotonic()
    try:
        done = Round(fault.name, fault.inject(target, leader), watched)
        done.seen = _observe(target, work.topic, watched, observer, began)
    finally:
        fault.heal(target)
    done.healed_after_s = time.monotonic() - began
    wait_until_in_sync(target, topics)

    def produced_again() -> None:
        waiting = [p.name for p in work.producers if p.first_ack_after(watched, began) is None]
        assert not waiting, (
            f"no produce to partition {watched} acknowledged yet for {', '.join(waiting)}; "
            f"{work.clients_report()}"
        )

    eventually(produced_again, timeout_s=FAILOVER_TIMEOUT_S, interval_s=0.2)
    times = sorted(t for p in work.producers for t in p.ack_times(watched, began))
    moments = [began, *times]
    done.longest_gap_s = max(later - earlier for earlier, later in zip(moments, moments[1:], strict=False))
    return done


def _observe(target: NemesisCluster, topic: str, partition: int, observer: int, began: float) -> list[str]:
    """``partition``'s state as ``observer`` reports it, every half second until :data:`HOLD_S`
    after ``began``: the first, and each change, with when."""
    seen: list[str] = []
    last = None
    while (now := time.monotonic()) < began + HOLD_S:
        try:
            state = topic_partitions(target.cluster.nodes[observer], topic).get(partition)
        except (OSError, struct.error):
            state = None
        if state is not None and state != last:
            isr = ",".join(map(str, sorted(state.isr)))
            seen.append(f"{now - began:.1f} s: node {observer} sees leader {state.leader}, isr {isr}")
            last = state
        time.sleep(min(0.5, max(0.0, began + HOLD_S - time.monotonic())))
    return seen


def run_nemesis(
    work: Workload,
    target: NemesisCluster,
    chosen: Sequence[Fault],
    rounds: int,
    progress: Callable[[str], None],
) -> list[Round]:
    """``rounds`` rounds over ``chosen`` in turn (partitions in turn too), the history checked
    after each; raises AssertionError at the first round whose history is wrong."""

    def consuming() -> None:
        assert work.group.given_any(work.acked_since(0.0)), "the group has not been given a record yet"

    eventually(consuming, timeout_s=FAILOVER_TIMEOUT_S, interval_s=0.2)
    partitions = work.producers[0].partitions
    done = []
    for number in range(rounds):
        fault = chosen[number % len(chosen)]
        began = time.monotonic()
        finished = run_round(work, target, fault, number % partitions)
        done.append(finished)
        checked = time.monotonic()
        acked = work.acked_since(0.0)
        report = history(target, work, acked)
        took = f"round {checked - began:.0f} s, check {time.monotonic() - checked:.0f} s"
        progress(f"round {number + 1}/{rounds} {finished}; history ({took}): {str(report).splitlines()[0]}")
        assert report.ok, f"round {number + 1} ({fault.name}: {finished.what}):\n{report}"
    return done
