"""What a request handler gets besides the request body.

Handlers are ``async def handle(ctx: RequestContext, request: dict) -> dict | None`` (or a
:class:`PendingResponse` when the answer must wait for something after the work is done); they
reach shared broker state through ``ctx.broker`` rather than globals so that tests can run
several brokers in one process.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wire.header import RequestHeader

if TYPE_CHECKING:
    from broker.node.server import Broker
    from broker.services.security.authentication import ConnectionAuth


ANONYMOUS = "User:ANONYMOUS"
"""Kafka's principal for a connection nobody authenticated (every PLAINTEXT client)."""


@dataclass(slots=True)
class RequestContext:
    """One request's envelope: its header, the broker it arrived at, the peer and who it is."""

    header: RequestHeader
    broker: Broker
    client_address: str
    auth: ConnectionAuth  # the connection's listener and (authenticated) principal
    throttle_ms: int = 0  # a quota the handler found exceeded (Fetch's consumer byte rate)

    @property
    def principal(self) -> str:
        """Kafka's principal string: ``User:alice``, ``User:CN=...`` or ``User:ANONYMOUS``."""
        return self.auth.principal

    @property
    def listener_name(self) -> str:
        return self.auth.security.name

    @property
    def host(self) -> str:
        """The client's IP address, as ACLs match it."""
        return self.auth.host

    @property
    def api_version(self) -> int:
        return self.header.api_version


class PendingResponse:
    """A handler's answer that is complete only after a wait the connection need not sit out.

    Produce returns one when its appends are done but must wait for a group-commit sync
    (``broker.services.storage.durability``): the connection goes on reading and handling the client's next
    requests, and sends this answer, in request order, once ``finish`` returns it.
    """

    __slots__ = ("_finish", "_ready")

    def __init__(
        self,
        finish: Callable[[], Awaitable[dict[str, Any] | None]],
        ready: Callable[[], bool] | None = None,
    ) -> None:
        self._finish = finish
        self._ready = ready

    async def finish(self) -> dict[str, Any] | None:
        return await self._finish()

    def ready(self) -> bool:
        """True if ``finish`` would return without waiting (a waiter that cannot tell says
        False): the connection then sends this answer with the earlier ones it is sending."""
        return self._ready is not None and self._ready()


Handler = Callable[[RequestContext, dict[str, Any]], Awaitable[dict[str, Any] | PendingResponse | None]]
