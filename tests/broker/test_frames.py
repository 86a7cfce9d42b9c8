"""Frames over a real socket pair: memory is charged as bytes arrive, small frames never wait,
and waiting for memory counts against the read timeout."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

from broker.network.frames import FrameReader, FrameTimeout
from broker.network.memory_budget import MemoryBudget, RequestTooLarge
from broker.network.transport import PlainTransport

DEADLINE_S = 10
READ_TIMEOUT_S = 0.3
HOLDER = "another connection"


@asynccontextmanager
async def frame_reader(budget: MemoryBudget) -> AsyncIterator[tuple[FrameReader, trio.socket.SocketType]]:
    """A reader on one end of a socket pair, and the other end for the test to write to."""
    server, client = trio.socket.socketpair()
    with server, client:
        yield FrameReader(PlainTransport(server), 100 << 20, budget, READ_TIMEOUT_S), client


async def send(sock: trio.socket.SocketType, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[await sock.send(view) :]


def used(budget: MemoryBudget) -> int:
    assert budget.capacity is not None
    return budget.capacity - budget.available


async def test_a_prefix_alone_is_charged_nothing_and_a_body_only_what_has_arrived() -> None:
    budget = MemoryBudget(256 << 20)
    async with frame_reader(budget) as (reader, client):
        with trio.fail_after(DEADLINE_S):
            await send(client, struct.pack(">i", 100_000_000))
            size = await reader.next_size()
            assert size == 100_000_000
            async with trio.open_nursery() as nursery:
                nursery.start_soon(reader.read_body, size)
                await trio.testing.wait_all_tasks_blocked()
                assert used(budget) == 0  # a promise of 100 MB costs nothing
                await send(client, bytes(100_000))
                await trio.sleep(0.05)
                await trio.testing.wait_all_tasks_blocked()
                assert 0 < used(budget) <= 2 * 100_000  # at most twice what arrived
                nursery.cancel_scope.cancel()
    assert used(budget) == 0  # an abandoned frame gives everything back


async def test_a_small_frame_is_served_while_the_budget_is_spent() -> None:
    budget = MemoryBudget(1 << 20)
    await budget.charge(1 << 20, 0.0, HOLDER, 0)
    async with frame_reader(budget) as (reader, client):
        with trio.fail_after(DEADLINE_S):
            await send(client, struct.pack(">i", 100) + bytes(100))
            size = await reader.next_size()
            assert size == 100
            assert bytes(await reader.read_body(size)) == bytes(100)
            assert reader.charged == 0


async def test_waiting_for_memory_past_the_read_timeout_ends_the_frame() -> None:
    budget = MemoryBudget(1 << 20)
    await budget.charge(1 << 20, 0.0, HOLDER, 0)
    async with frame_reader(budget) as (reader, client):
        with trio.fail_after(DEADLINE_S):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(send, client, struct.pack(">i", 400_000) + bytes(400_000))
                size = await reader.next_size()
                assert size is not None
                with pytest.raises(FrameTimeout, match="waiting for memory") as refused:
                    await reader.read_body(size)
                nursery.cancel_scope.cancel()
            assert refused.value.waiting_for_memory
    assert budget.available == 0  # the holder's charge only: the refused frame kept nothing


async def test_a_slow_sender_times_out_waiting_for_its_bytes() -> None:
    budget = MemoryBudget(1 << 20)
    async with frame_reader(budget) as (reader, client):
        with trio.fail_after(DEADLINE_S):
            await send(client, struct.pack(">i", 400_000) + bytes(1000))
            size = await reader.next_size()
            assert size is not None
            with pytest.raises(FrameTimeout, match="waiting for its bytes") as refused:
                await reader.read_body(size)
            assert not refused.value.waiting_for_memory
    assert used(budget) == 0


@pytest.mark.parametrize("size", [20_000, 400_000, 3 << 20])
async def test_large_frames_arrive_whole_and_their_charge_comes_back(size: int) -> None:
    budget = MemoryBudget(16 << 20)
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    async with frame_reader(budget) as (reader, client):
        with trio.fail_after(DEADLINE_S):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(send, client, struct.pack(">i", size) + payload)
                frame_size = await reader.next_size()
                assert frame_size == size
                frame = await reader.read_body(size)
            assert bytes(frame) == payload
            assert reader.charged == used(budget) >= size
            reader.release()
    assert used(budget) == 0


async def test_a_frame_over_one_connections_share_is_refused_at_its_prefix() -> None:
    budget = MemoryBudget(1 << 20)
    async with frame_reader(budget) as (reader, client):
        with trio.fail_after(DEADLINE_S):
            await send(client, struct.pack(">i", (1 << 19) + 1))
            with pytest.raises(RequestTooLarge):
                await reader.next_size()
