"""A follower's quiet session partitions on the leader (``partition_reads.QuietMark``): skipped
only while nothing its answer depends on has moved, and its fetch still recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from broker.services.storage.fetch_sessions import SessionPartition
from broker.services.storage.partition_reads import mark_quiet, still_quiet

KEY = ("t", 0)
FOLLOWER = 2


@dataclass
class FakeLog:
    log_end_offset: int = 10
    high_watermark: int = 10
    log_start_offset: int = 0
    is_online: bool = True


@dataclass
class FakeState:
    followers: dict[int, Any] = field(default_factory=lambda: {FOLLOWER: None})


@dataclass
class FakeReplicas:
    state: FakeState | None = field(default_factory=FakeState)
    fetched: list[int] = field(default_factory=list)

    def leader(self, key: tuple[str, int]) -> FakeState | None:
        return self.state

    def follower_fetched(self, key: tuple[str, int], follower: int, offset: int, log: FakeLog) -> None:
        self.fetched.append(offset)


def quiet_target(replicas: FakeReplicas, log: FakeLog, offset: int = 10) -> SessionPartition:
    target = SessionPartition("t", bytes(16), 0, offset, 1 << 20, 5, 5)
    mark_quiet(replicas, KEY, log, target)  # type: ignore[arg-type]
    return target


def is_quiet(replicas: FakeReplicas, target: SessionPartition) -> bool:
    return still_quiet(replicas, KEY, FOLLOWER, target)  # type: ignore[arg-type]


def test_a_partition_stays_quiet_while_nothing_moves_and_each_fetch_is_recorded() -> None:
    replicas, log = FakeReplicas(), FakeLog()
    target = quiet_target(replicas, log)
    assert is_quiet(replicas, target) and is_quiet(replicas, target)
    assert replicas.fetched == [10, 10]


def test_any_move_makes_it_read_again() -> None:
    moves = [
        lambda r, log, t: setattr(log, "log_end_offset", 11),  # an append
        lambda r, log, t: setattr(log, "high_watermark", 9),  # another high watermark
        lambda r, log, t: setattr(log, "log_start_offset", 3),  # retention, DeleteRecords
        lambda r, log, t: setattr(log, "is_online", False),  # a disk error
        lambda r, log, t: setattr(r, "state", FakeState()),  # a new leader epoch
        lambda r, log, t: setattr(r, "state", None),  # not leading any more
        lambda r, log, t: r.state.followers.clear(),  # no longer a replica
        lambda r, log, t: setattr(t, "current_leader_epoch", 6),  # the follower's new position
    ]
    for move in moves:
        replicas, log = FakeReplicas(), FakeLog()
        target = quiet_target(replicas, log)
        move(replicas, log, target)
        assert not is_quiet(replicas, target)


def test_a_follower_behind_the_log_end_is_never_marked_quiet() -> None:
    replicas = FakeReplicas()
    target = quiet_target(replicas, FakeLog(), offset=8)  # held back by a throttle, say
    assert target.quiet is None and not is_quiet(replicas, target)
