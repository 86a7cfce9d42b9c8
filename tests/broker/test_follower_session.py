"""A follower's fetch session (KIP-227, Kafka's FetchSessionHandler): full fetches until the
leader opens a session, then only what moved, and back to full on any doubt."""

from __future__ import annotations

from broker.services.replication.fetch_session import FollowerSession
from wire.fetch_session_epochs import INITIAL_EPOCH, INVALID_SESSION_ID


def position(offset: int, epoch: int = 1) -> dict[str, int]:
    return {"partition": 0, "current_leader_epoch": epoch, "fetch_offset": offset}


def test_a_full_fetch_opens_the_session_and_then_only_what_moved_is_named() -> None:
    session = FollowerSession()
    wanted = {("t", 0): position(5), ("t", 1): position(7)}
    assert session.request(wanted) == (wanted, [])
    assert (session.id, session.epoch) == (INVALID_SESSION_ID, INITIAL_EPOCH)
    session.answered(42, wanted)
    assert (session.id, session.epoch) == (42, 1)
    assert session.request(wanted) == ({}, [])  # nothing moved: an empty long poll
    moved = {("t", 0): position(6), ("t", 1): wanted[("t", 1)]}  # the fetcher keeps an unmoved entry
    assert session.request(moved) == ({("t", 0): position(6)}, [])
    session.answered(42, moved)
    assert session.epoch == 2


def test_an_entry_built_again_is_named_again() -> None:
    """Entries are compared by identity (the fetcher builds one again only when its log moved):
    an equal new one is named once more, which a session allows, and never left out."""
    session = FollowerSession()
    session.answered(42, {("t", 0): position(5)})
    assert session.request({("t", 0): position(5)}) == ({("t", 0): position(5)}, [])


def test_partitions_left_out_are_forgotten_and_new_epochs_resent() -> None:
    session = FollowerSession()
    session.answered(42, {("t", 0): position(5), ("t", 1): position(7)})
    named, forgotten = session.request({("t", 1): position(7, epoch=2)})
    assert named == {("t", 1): position(7, epoch=2)} and forgotten == [("t", 0)]


def test_a_declined_closed_or_replaced_session_starts_over_in_full() -> None:
    wanted = {("t", 0): position(5)}
    for answered_id in (INVALID_SESSION_ID, 43):
        session = FollowerSession()
        session.answered(42, wanted)
        session.answered(answered_id, wanted)
        assert (session.id, session.epoch) == (INVALID_SESSION_ID, INITIAL_EPOCH)
        assert session.request(wanted) == (wanted, [])
    session.answered(42, wanted)
    session.reset()  # the leader answered a session error
    assert (session.id, session.epoch) == (INVALID_SESSION_ID, INITIAL_EPOCH)
