"""The request memory budget: backpressure in arrival order, no leaks on cancellation."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from broker.memory_budget import MemoryBudget, RequestTooLarge

DEADLINE_S = 10


async def test_waiters_are_granted_in_arrival_order() -> None:
    budget = MemoryBudget(100)
    granted: list[str] = []

    async def reserve(name: str, size: int) -> None:
        await budget.acquire(size)
        granted.append(name)

    with trio.fail_after(DEADLINE_S):
        await budget.acquire(90)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reserve, "large", 80)
            await trio.testing.wait_all_tasks_blocked()
            # Fits in what is left, but must not overtake the large request already waiting.
            nursery.start_soon(reserve, "small", 5)
            await trio.testing.wait_all_tasks_blocked()
            assert granted == []  # "small" fits in the 10 left, yet waits its turn
            budget.release(90)
        assert sorted(granted) == ["large", "small"]
        assert budget.available == 15


async def test_a_cancelled_waiter_gives_its_place_away() -> None:
    budget = MemoryBudget(100)
    front = trio.CancelScope()
    behind_granted = trio.Event()

    async def reserve_front() -> None:
        with front:
            await budget.acquire(50)

    async def reserve_behind() -> None:
        await budget.acquire(30)
        behind_granted.set()

    with trio.fail_after(DEADLINE_S):
        await budget.acquire(60)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reserve_front)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(reserve_behind)
            await trio.testing.wait_all_tasks_blocked()
            assert not behind_granted.is_set()  # 30 would fit, but it is in line behind the 50
            front.cancel()
            await behind_granted.wait()
        assert budget.available == 10
        budget.release(30)
        budget.release(60)
        assert budget.available == 100


async def test_a_frame_larger_than_the_budget_is_refused_not_waited_for() -> None:
    budget = MemoryBudget(100)
    with pytest.raises(RequestTooLarge, match="queued.max.request.bytes=100"):
        await budget.acquire(101)
    assert budget.available == 100


async def test_unbounded_budget_never_waits() -> None:
    budget = MemoryBudget(None)
    with trio.fail_after(DEADLINE_S):
        for _ in range(3):
            await budget.acquire(1 << 40)
