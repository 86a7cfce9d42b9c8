"""A follower's quiet session partitions on the leader (``partition_reads.QuietMark``): skipped
only while nothing its answer depends on has moved, and its fetch still recorded on the
follower's progress, which the ISR check reads."""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.services.replication.leader_state import LeaderState
from broker.services.storage.fetch_sessions import FetchSession, SessionPartition
from broker.services.storage.partition_reads import mark_quiet, still_quiet

KEY = ("t", 0)
LEADER, FOLLOWER = 1, 2


@dataclass
class FakeLog:
    """The offsets and availability of a PartitionLog, without its files."""

    log_end_offset: int = 10
    high_watermark: int = 10
    log_start_offset: int = 0
    is_online: bool = True


def leadership(isr: tuple[int, ...] = (LEADER, FOLLOWER)) -> LeaderState:
    return LeaderState(LEADER, 5, 1, [LEADER, FOLLOWER], list(isr), 0, 10, now_ms=0)


@dataclass
class Replicas:
    """What the quiet marks ask of the ReplicaManager: who leads ``KEY``, and the clock."""

    state: LeaderState | None = field(default_factory=leadership)
    now: int = 1_000

    def leader(self, key: tuple[str, int]) -> LeaderState | None:
        return self.state

    def now_ms(self) -> int:
        return self.now


def quiet_target(replicas: Replicas, log: FakeLog, offset: int = 10) -> SessionPartition:
    target = SessionPartition("t", bytes(16), 0, offset, 1 << 20, 5, 5)
    mark_quiet(replicas, KEY, FOLLOWER, log, target)  # type: ignore[arg-type]
    return target


def is_quiet(replicas: Replicas, target: SessionPartition) -> bool:
    return still_quiet(replicas, KEY, FOLLOWER, target)  # type: ignore[arg-type]


def test_a_partition_stays_quiet_while_nothing_moves_and_each_fetch_is_recorded() -> None:
    replicas, log = Replicas(), FakeLog()
    target = quiet_target(replicas, log)
    assert replicas.state is not None
    progress = replicas.state.followers[FOLLOWER]
    for now in (1_000, 2_000):
        replicas.now = now
        assert is_quiet(replicas, target)
        assert (progress.log_end_offset, progress.last_caught_up_ms, progress.last_fetch_ms) == (10, now, now)


def test_any_move_makes_it_read_again() -> None:
    def named_again(r: Replicas, log: FakeLog, t: SessionPartition) -> None:
        session = FetchSession(1, True, False, 0, {("t", 0): t})
        session.update([SessionPartition("t", bytes(16), 0, 10, 1 << 20, 6, 5)], [])

    moves = [
        lambda r, log, t: setattr(log, "log_end_offset", 11),  # an append
        lambda r, log, t: setattr(log, "high_watermark", 9),  # another high watermark
        lambda r, log, t: setattr(log, "log_start_offset", 3),  # retention, DeleteRecords
        lambda r, log, t: setattr(log, "is_online", False),  # a disk error
        lambda r, log, t: setattr(r, "state", leadership()),  # a new leader epoch
        lambda r, log, t: setattr(r, "state", None),  # not leading any more
        lambda r, log, t: r.state.isr.remove(FOLLOWER),  # shrunk out of the ISR
        lambda r, log, t: r.state.update_assignment(2, [LEADER], [LEADER], 0),  # no longer a replica
        named_again,  # the follower's new position (its leader epoch here)
    ]
    for move in moves:
        replicas, log = Replicas(), FakeLog()
        target = quiet_target(replicas, log)
        assert target.quiet is not None
        move(replicas, log, target)
        assert not is_quiet(replicas, target)


def test_only_an_in_sync_follower_at_the_log_end_is_marked_quiet() -> None:
    """One behind the end may have been held back by a throttle, which may lift; one outside the
    ISR is read each time, so that its fetch can bring it back in."""
    behind = quiet_target(Replicas(), FakeLog(), offset=8)
    outside = quiet_target(Replicas(leadership(isr=(LEADER,))), FakeLog())
    assert behind.quiet is None and outside.quiet is None
