"""Cluster-unique producer ids handed out without waiting: blocks reserved in etcd ahead of use.

The transaction coordinator is sans-IO and allocates synchronously, so it cannot wait for etcd.
As Kafka's brokers do (``RPCProducerIdManager``), the broker keeps the block it hands ids from
and asks for the next one in the background once half of it is used; when both run dry (etcd
unreachable for a whole block) the caller is told to retry, as Kafka answers
COORDINATOR_LOAD_IN_PROGRESS then.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from broker.services.cluster.etcd_client import EtcdError

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 1.0  # between failed block requests while etcd is unreachable


class ProducerIdBlocks:
    """Producer ids from blocks of ``block_size`` reserved through ``take_block`` (returns the
    first id of a block no other broker hands out)."""

    def __init__(self, take_block: Callable[[int], Awaitable[int]], block_size: int) -> None:
        self._take_block = take_block
        self._block_size = block_size
        self._next = self._end = 0
        self._spare: int | None = None  # first id of the block reserved ahead
        self._wanted = trio.Event()
        self._wanted.set()  # reserve one at start-up

    def allocate_now(self) -> int | None:
        """The next id, or None while no reserved id is left (the refill is under way)."""
        if self._next >= self._end:
            if self._spare is None:
                self._wanted.set()
                return None
            self._next, self._end, self._spare = self._spare, self._spare + self._block_size, None
        producer_id = self._next
        self._next += 1
        if self._spare is None and self._end - self._next <= self._block_size // 2:
            self._wanted.set()
        return producer_id

    async def allocate(self) -> int:
        """The next id, waiting for a block when none is reserved; ``EtcdError`` if etcd cannot
        give one now."""
        producer_id = self.allocate_now()
        if producer_id is None:
            first = await self._take_block(self._block_size)
            if self._next >= self._end:
                self._next, self._end = first, first + self._block_size
            elif self._spare is None:
                self._spare = first  # (else another caller's block came first: this one is skipped)
            producer_id = self.allocate_now()
            if producer_id is None:  # cannot happen: a block was just installed
                raise EtcdError("no producer id block could be installed")
        return producer_id

    async def run(self) -> None:
        """Reserve the next block whenever the current one is half used (or gone)."""
        while True:
            await self._wanted.wait()
            self._wanted = trio.Event()
            while self._spare is None:
                try:
                    self._spare = await self._take_block(self._block_size)
                except EtcdError as exc:
                    log.warning("cannot reserve producer ids yet: %s", exc)
                    await trio.sleep(RETRY_BACKOFF_S)
