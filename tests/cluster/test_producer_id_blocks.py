"""Producer ids from blocks reserved in a real etcd: the synchronous path hands out nothing before
a block is reserved, goes on across blocks as the background task reserves them, and two brokers
never share an id."""

from __future__ import annotations

import uuid

import trio

from broker.services.cluster.cluster_metadata import ClusterMetadata, take_producer_id_block
from broker.services.cluster.etcd_client import EtcdClient
from broker.services.cluster.layout import Layout
from broker.services.cluster.producer_id_blocks import ProducerIdBlocks

BLOCK = 10


async def _taken(blocks: ProducerIdBlocks, count: int) -> list[int]:
    """``count`` ids from the synchronous path, letting the background refill run between them."""
    taken: list[int] = []
    with trio.fail_after(30):
        while len(taken) < count:
            producer_id = blocks.allocate_now()
            if producer_id is None:
                await trio.sleep(0.01)
            else:
                taken.append(producer_id)
    return taken


async def test_blocks_are_reserved_ahead_and_never_shared(etcd_cluster) -> None:
    client = EtcdClient(etcd_cluster.endpoints)
    await client.connect()
    metadata = ClusterMetadata(client, Layout(f"/odradek-test-{uuid.uuid4().hex[:12]}"))
    first = ProducerIdBlocks(lambda size: take_producer_id_block(metadata, size), BLOCK)
    second = ProducerIdBlocks(lambda size: take_producer_id_block(metadata, size), BLOCK)
    assert first.allocate_now() is None  # nothing reserved before the refill task ran
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(first.run)
            nursery.start_soon(second.run)
            ids = await _taken(first, 3 * BLOCK) + await _taken(second, 3 * BLOCK)
            ids.append(await first.allocate())
            nursery.cancel_scope.cancel()
    finally:
        await client.aclose()
    assert len(set(ids)) == len(ids)  # unique across both brokers and across blocks
