"""Wake-ups of parked fetches: appends wake every fetch, a higher high watermark only the
consumers' (a follower reads to the log end), and a fetch learns which partitions woke it."""

from __future__ import annotations

import trio
import trio.testing

from broker.services.storage.appends import AppendNotifier

A, B = ("t", 0), ("t", 1)


async def woken_by(notify: str, follower: bool) -> set[tuple[str, int]]:
    """What a fetch parked on A and B learns when ``notify`` is called for A."""
    appends = AppendNotifier()
    woken: set[tuple[str, int]] = set()

    async def park() -> None:
        woken.update(await appends.wait_any([A, B], 0.5, follower))

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(park)
            await trio.testing.wait_all_tasks_blocked()
            getattr(appends, notify)(A)
    return woken


async def test_an_append_wakes_consumers_and_followers_with_its_partition() -> None:
    assert await woken_by("notify", follower=False) == {A}
    assert await woken_by("notify", follower=True) == {A}


async def test_a_high_watermark_wakes_only_consumers() -> None:
    assert await woken_by("notify_readable", follower=False) == {A}
    assert await woken_by("notify_readable", follower=True) == set()


async def test_a_replicated_append_wakes_only_followers() -> None:
    assert await woken_by("notify_replicated", follower=False) == set()
    assert await woken_by("notify_replicated", follower=True) == {A}
