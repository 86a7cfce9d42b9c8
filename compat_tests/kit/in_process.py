"""An Odradek broker in the test's own trio loop, on an ephemeral loopback port.

For tests that reach inside the broker while it serves (its partitions' logs, its clock, its
replication) or that must control every byte on the wire (:mod:`compat_tests.kit.raw_protocol`:
``connect``, ``request_frame``, ``receive_frame``). The other launchers start processes:
:mod:`compat_tests.kit.broker_process` (Odradek, restartable on its port and data) and
:mod:`compat_tests.kit.brokers` (Odradek or Apache Kafka).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from broker.config.config import BrokerConfig
from broker.node.server import Broker, serve
from log.clock import Clock, wall_clock_ms


@asynccontextmanager
async def running_broker(
    tmp_path: Path,
    *,
    clock: Clock = wall_clock_ms,
    prepare: Callable[[Broker], object] | None = None,
    **overrides: str,
) -> AsyncIterator[tuple[Broker, int]]:
    """A broker served on an ephemeral port; ``prepare`` runs between its creation and
    ``serve`` (cluster tests start replication there)."""
    settings = {"log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://127.0.0.1:0"}
    settings.update({k.replace("_", "."): v for k, v in overrides.items()})
    broker = Broker(BrokerConfig.load(overrides=settings, environ={}), clock)
    if prepare is not None:
        prepare(broker)
    try:
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(serve, broker)
            yield broker, listeners[0].port
            nursery.cancel_scope.cancel()
    finally:
        broker.close()
