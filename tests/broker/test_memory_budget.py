"""The request memory budget: no head-of-line blocking, progress for the oldest frame, a bounded
share per connection, no leaks on cancellation."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from broker.network.memory_budget import MemoryBudget, RequestTooLarge

DEADLINE_S = 10


async def test_a_step_that_fits_is_not_queued_behind_a_larger_one() -> None:
    """The first design served waiters strictly in line, so one frame that could not be
    granted held up every other client."""
    budget = MemoryBudget(100)
    granted: list[str] = []

    async def charge(name: str, size: int, started: float) -> None:
        await budget.charge(size, started, name, 0)
        granted.append(name)

    with trio.fail_after(DEADLINE_S):
        await budget.charge(40, 0.0, "first", 0)
        await budget.charge(40, 1.0, "second", 0)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(charge, "large", 45, 2.0)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(charge, "small", 5, 3.0)
            await trio.testing.wait_all_tasks_blocked()
            assert granted == ["small"]  # fits in the 20 left, though "large" waits before it
            budget.release(40, "first")
        assert granted == ["small", "large"]
        assert budget.available == 10


async def test_the_oldest_waiting_frame_may_overdraw_so_partial_frames_cannot_deadlock() -> None:
    """Frames charged as their bytes arrive each hold part of what they need; if all of them
    waited for more, none would ever finish.  The oldest may overdraw by one share, and keep
    doing so until it has been handled; nobody else meanwhile."""
    budget = MemoryBudget(100)  # share 50
    with trio.fail_after(DEADLINE_S):
        await budget.charge(50, 5.0, "younger", 0)
        await budget.charge(45, 1.0, "oldest", 0)
        assert budget.available == 5
        await budget.charge(30, 1.0, "oldest", 45)  # more than is left: granted as overdraft
        await budget.charge(10, 1.0, "oldest", 75)  # and its next step too
        assert budget.available == -35
        granted = trio.Event()

        async def younger() -> None:
            await budget.charge(10, 5.0, "younger", 50)
            granted.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(younger)
            await trio.testing.wait_all_tasks_blocked()
            assert not granted.is_set()  # nobody else may overdraw
            budget.release(85, "oldest")  # the oldest frame was handled
            await granted.wait()
        assert budget.available == 40


async def test_overdraft_never_exceeds_one_share() -> None:
    budget = MemoryBudget(100)
    with trio.fail_after(DEADLINE_S):
        await budget.charge(100, 0.0, "first", 0)
        await budget.charge(50, 1.0, "second", 1)  # the whole share as overdraft
        assert budget.available == -50
        with trio.move_on_after(0.1) as waited:
            await budget.charge(1, 1.0, "second", 51)
        assert waited.cancelled_caught
        assert budget.available == -50


async def test_a_cancelled_waiter_takes_nothing_and_lets_others_through() -> None:
    budget = MemoryBudget(100)
    front = trio.CancelScope()
    behind_granted = trio.Event()

    async def charge_front() -> None:
        with front:
            await budget.charge(60, 2.0, "front", 0)

    async def charge_behind() -> None:
        await budget.charge(30, 3.0, "behind", 0)
        behind_granted.set()

    with trio.fail_after(DEADLINE_S):
        await budget.charge(50, 0.0, "first", 0)
        await budget.charge(45, 1.0, "second", 0)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(charge_front)
            nursery.start_soon(charge_behind)
            await trio.testing.wait_all_tasks_blocked()
            front.cancel()
            await trio.testing.wait_all_tasks_blocked()
            assert not behind_granted.is_set()
            budget.release(50, "first")
            await behind_granted.wait()
        assert budget.available == 25


def test_a_frame_over_one_connections_share_is_refused_before_it_is_read() -> None:
    budget = MemoryBudget(100)
    budget.check_frame(50)
    with pytest.raises(RequestTooLarge, match="queued.max.request.bytes=100"):
        budget.check_frame(51)
    assert budget.available == 100


async def test_unbounded_budget_never_waits_or_refuses() -> None:
    budget = MemoryBudget(None)
    budget.check_frame(1 << 40)
    with trio.fail_after(DEADLINE_S):
        for _ in range(3):
            assert await budget.charge(1 << 40, 0.0, "frame", 0) == 0.0
