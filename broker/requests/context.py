"""What a request handler gets besides the request body.

Handlers are ``async def handle(ctx: RequestContext, request: XRequest) -> XResponse | None``
(or a :class:`PendingResponse` when the answer must wait for something after the work is done),
with the types :mod:`wire.messages` generates for API X; they reach shared broker state through
``ctx.broker`` rather than globals so that tests can run several brokers in one process.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wire.header import RequestHeader

if TYPE_CHECKING:
    from broker.requests.node_services import NodeServices
    from broker.services.security.authentication import ConnectionAuth


@dataclass(slots=True)
class RequestContext:
    """One request's envelope: its header, the broker it arrived at, the peer and who it is."""

    header: RequestHeader
    broker: NodeServices
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


Response = Mapping[str, Any]
"""A response body to encode: a ``TypedDict`` of :mod:`wire.messages` (a dict at run time)."""


class PendingResponse:
    """A handler's answer that is complete only after a wait the connection need not sit out.

    Produce returns one when its appends are done but must wait for a group-commit sync
    (``broker.services.storage.durability``): the connection goes on reading and handling the client's next
    requests, and sends this answer, in request order, once ``finish`` returns it.
    """

    __slots__ = ("_finish", "_ready")

    def __init__(
        self,
        finish: Callable[[], Awaitable[Response | None]],
        ready: Callable[[], bool] | None = None,
    ) -> None:
        self._finish = finish
        self._ready = ready

    async def finish(self) -> Response | None:
        return await self._finish()

    def ready(self) -> bool:
        """True if ``finish`` would return without waiting (a waiter that cannot tell says
        False): the connection then sends this answer with the earlier ones it is sending."""
        return self._ready is not None and self._ready()


Handler = Callable[[RequestContext, Any], Awaitable[Response | PendingResponse | None]]
"""A handler; its request is the ``TypedDict`` of its API's request (``Any`` here: each handler
names its own, and a Callable's parameter cannot be narrowed per API)."""
