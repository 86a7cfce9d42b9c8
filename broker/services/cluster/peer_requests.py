"""Requests from this broker to another one (transaction markers, transaction verification):
one connection per broker, one request in flight on it, as Kafka's inter-broker channels.

Built on ``broker.services.replication.peer_connection`` (the replica fetchers keep their own connection
per leader, as Kafka's fetcher threads do).  A failed or timed-out request drops its connection,
so the next one starts clean; the caller decides whether and when to try again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from broker.services.replication.peer_connection import PeerConnection

MAX_RESPONSE_BYTES = 1 << 20  # markers and verifications answer a few bytes per partition


class PeerRequests:
    """Requests to the brokers ``endpoint_of(node_id)`` locates (None: unknown or not alive)."""

    def __init__(self, endpoint_of: Callable[[int], tuple[str, int] | None], client_id: str) -> None:
        self._endpoint_of = endpoint_of
        self._client_id = client_id
        self._connections: dict[int, PeerConnection] = {}
        self._locks: dict[int, trio.Lock] = {}

    async def request(
        self, node_id: int, api_key: int, version: int, body: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        """One request to broker ``node_id``, answered within ``timeout_s``; ``ConnectionError``
        when it cannot be sent or answered (the connection is closed then)."""
        lock = self._locks.setdefault(node_id, trio.Lock())
        async with lock:
            try:
                with trio.fail_after(timeout_s):
                    connection = self._connections.get(node_id)
                    if connection is None:
                        endpoint = self._endpoint_of(node_id)
                        if endpoint is None:
                            raise ConnectionError(f"broker {node_id} has no inter-broker endpoint")
                        connection = await PeerConnection.open(
                            *endpoint, self._client_id, MAX_RESPONSE_BYTES, timeout_s
                        )
                        self._connections[node_id] = connection
                    return await connection.request(api_key, version, body)
            except (OSError, trio.BrokenResourceError, trio.TooSlowError) as exc:  # ConnectionError too
                await self._drop(node_id)
                raise ConnectionError(f"broker {node_id}: {exc or type(exc).__name__}") from exc

    async def _drop(self, node_id: int) -> None:
        connection = self._connections.pop(node_id, None)
        if connection is not None:
            with trio.CancelScope(shield=True):
                await connection.aclose()
