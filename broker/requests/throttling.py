"""Applying client quotas to one request: its throttle time, and muting its connection.

Kafka answers a request that takes its client over a quota at once, with ``throttle_time_ms``
set, and then mutes the client's channel for that long (KIP-219): it reads nothing more from
that connection until the time has passed, while clients also hold back by themselves.  In
Odradek the connection holds a :class:`ChannelMute` and waits on it before reading its next
request; the response already went out.

Produce bytes (the request's size, as Kafka's ``request.sizeInBytes``) and request time are
counted here for every API but Fetch, which counts its time and response bytes itself
(:func:`broker.handlers.fetch.handle_fetch`): a throttled Fetch answers without data, and the
time it waits for data is not handling time.
"""

from __future__ import annotations

import trio

from broker.requests.context import RequestContext
from wire.api_keys import ApiKey

# Kafka's SASL authenticator answers these (and ApiVersions before authentication) itself,
# outside the request quota; after authentication ApiVersions is counted like any request.
_AUTHENTICATION = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


def _exempt(ctx: RequestContext) -> bool:
    api_key = ctx.header.api_key
    if api_key == ApiKey.API_VERSIONS:
        return ctx.auth.gated and not ctx.auth.authenticated
    return api_key in _AUTHENTICATION


class ChannelMute:
    """When a connection may read its next request again."""

    __slots__ = ("until",)

    def __init__(self) -> None:
        self.until = 0.0

    def hold(self, throttle_ms: int) -> None:
        self.until = max(self.until, trio.current_time() + throttle_ms / 1000)

    async def wait(self) -> None:
        if self.until > trio.current_time():
            await trio.sleep_until(self.until)


def throttle_ms(ctx: RequestContext, request_bytes: int, handling_seconds: float) -> int:
    """Count the request against its client's quotas; how long to throttle it (0: not at all).

    Only called while some quota is configured; what the handler found (``ctx.throttle_ms``)
    is included.
    """
    api_key = ctx.header.api_key
    if api_key == ApiKey.FETCH or _exempt(ctx):
        return ctx.throttle_ms
    quotas = ctx.broker.quotas
    principal, client = ctx.principal, ctx.header.client_id or ""
    throttle = max(ctx.throttle_ms, quotas.request_time(principal, client, handling_seconds))
    if api_key == ApiKey.PRODUCE:
        throttle = max(throttle, quotas.produce(principal, client, request_bytes))
    return throttle


# The first versions whose clients understand THROTTLING_QUOTA_EXCEEDED (KIP-599): from them on
# the mutation quota is strict, before them permissive.
_STRICT_SINCE = {ApiKey.CREATE_TOPICS: 6, ApiKey.CREATE_PARTITIONS: 3, ApiKey.DELETE_TOPICS: 5}


def count_mutation(ctx: RequestContext, partitions: int) -> bool:
    """Count the partitions one topic of a CreateTopics/CreatePartitions/DeleteTopics creates or
    deletes against the client's ``controller_mutation_rate``; False: refuse that topic with
    THROTTLING_QUOTA_EXCEEDED (:data:`THROTTLED`).  The throttle goes in ``ctx.throttle_ms``."""
    api_key = ctx.header.api_key
    allowed, throttle = ctx.broker.quotas.mutate(
        ctx.principal, ctx.header.client_id or "", partitions, ctx.api_version >= _STRICT_SINCE[api_key]
    )
    ctx.throttle_ms = max(ctx.throttle_ms, throttle)
    return allowed
