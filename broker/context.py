"""What a request handler gets besides the request body.

Handlers are ``async def handle(ctx: RequestContext, request: dict) -> dict | None``; they
reach shared broker state through ``ctx.broker`` rather than globals so that tests can run
several brokers in one process.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wire.header import RequestHeader

if TYPE_CHECKING:
    from broker.server import Broker


@dataclass(slots=True)
class RequestContext:
    """One request's envelope: its header, the broker it arrived at, and the peer."""

    header: RequestHeader
    broker: Broker
    client_address: str

    @property
    def api_version(self) -> int:
        return self.header.api_version


Handler = Callable[[RequestContext, dict[str, Any]], Awaitable[dict[str, Any] | None]]
