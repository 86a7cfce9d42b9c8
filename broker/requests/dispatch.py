"""From one request frame to the bytes of its response.

Decoding, version checks, handler lookup and response encoding live here so that every API
gets the same treatment: an unknown API or version closes the connection (as Kafka's
SocketServer does), except ApiVersions, which answers any version with a v0 body carrying
``UNSUPPORTED_VERSION`` and our ranges so the client can retry at a version we speak.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from time import perf_counter
from types import TracebackType
from typing import Any, Protocol

from broker.requests.api_ranges import ApiSupport
from broker.requests.api_support import NOT_SERVED, Served
from broker.requests.context import PendingResponse, RequestContext, Response
from broker.requests.node_services import NodeServices
from broker.requests.request_observer import RequestObserver
from broker.requests.throttling import ChannelMute, throttle_ms
from broker.services.security.authentication import AuthenticationError, ConnectionAuth
from log.disk_error_report import describe_os_error
from wire.api_keys import ApiKey, api_name
from wire.codec import decode_request, encode_response_parts
from wire.error_codes import ErrorCode
from wire.header import RequestHeader, decode_request_header, encode_response_header, response_header_version
from wire.schemas import ALL_APIS

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")


class CloseConnection(Exception):
    """The request cannot be answered; Kafka closes the connection in these cases."""


def api_versions_fallback(header: RequestHeader, apis: Iterable[ApiSupport]) -> list[Any]:
    """A v0 ApiVersions response with UNSUPPORTED_VERSION, for a version we do not speak."""
    body = encode_response_parts(
        ApiKey.API_VERSIONS,
        0,
        {
            "error_code": ErrorCode.UNSUPPORTED_VERSION,
            "api_keys": [
                {"api_key": a.key, "min_version": a.min_version, "max_version": a.max_version} for a in apis
            ],
        },
    )
    return frame_response(header.correlation_id, 0, body)


def frame_response(correlation_id: int, header_version: int, body: list[Any]) -> list[Any]:
    """The response as parts to send in order: size + header, then the body's parts."""
    head = encode_response_header(correlation_id, header_version)
    return [_SIZE.pack(len(head) + sum(len(part) for part in body)) + head, *body]


class HandlerFailed(CloseConnection):
    """A handler raised; already logged at ERROR with its request, so close quietly."""


class DispatchingNode(NodeServices, Protocol):
    """The node as dispatch sees it: the services handlers get, the handler of each API
    served, and the observer every answered request is reported to."""

    served: dict[ApiKey, Served]
    request_observer: RequestObserver


def describe_request(header: RequestHeader, client_address: str) -> str:
    """The request as an operator needs it in a log line: API, version, ids and peer."""
    return (
        f"{_name(header)} v{header.api_version} (correlation id {header.correlation_id}, "
        f"client id {header.client_id!r}) from {client_address}"
    )


class DeferredAnswer:
    """The connection's side of a :class:`PendingResponse`: its response buffers, once ready."""

    __slots__ = ("_pending", "_header", "_client_address", "_observer", "_started", "_throttle")

    def __init__(
        self,
        pending: PendingResponse,
        ctx: RequestContext,
        observer: RequestObserver,
        started: float,
        throttle: int,
    ) -> None:
        self._pending, self._header, self._client_address = pending, ctx.header, ctx.client_address
        self._observer, self._started, self._throttle = observer, started, throttle

    def ready(self) -> bool:
        """True if ``parts`` would return without waiting."""
        return self._pending.ready()

    async def parts(self) -> list[Any] | None:
        with _HandlerErrors(self._header, self._client_address):
            response = await self._pending.finish()
            if self._throttle and response is not None:
                response = with_throttle(self._header.api_key, response, self._throttle)
            parts = None if response is None else _encode(self._header, response)
            self._observer.finished(self._header, self._client_address, self._started, None, response)
            return parts


Answer = list[Any] | DeferredAnswer | None


class _HandlerErrors:
    """Log a handler's failure once, at ERROR with its request, and close the connection.

    A class rather than a generator context manager: it wraps every request."""

    __slots__ = ("_header", "_client_address")

    def __init__(self, header: RequestHeader, client_address: str) -> None:
        self._header, self._client_address = header, client_address

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool:
        if not isinstance(error, Exception) or isinstance(error, CloseConnection):
            return False  # success, a refusal the connection handles, or a cancellation
        header, request = self._header, describe_request(self._header, self._client_address)
        if isinstance(error, OSError):
            # Handlers do no socket I/O, so this is the disk (EMFILE, ENAMETOOLONG, EIO, ...).
            log.error("%s hit a disk error: %s", request, describe_os_error(error))
            raise HandlerFailed(f"disk error while handling {_name(header)}") from error
        log.error("internal error handling %s; closing its connection", request, exc_info=error)
        raise HandlerFailed(f"internal error while handling {_name(header)}") from error


def _name(header: RequestHeader) -> str:
    return api_name(header.api_key)


def _encode(header: RequestHeader, response: Response) -> list[Any]:
    body = encode_response_parts(header.api_key, header.api_version, response)
    return frame_response(
        header.correlation_id, response_header_version(header.api_key, header.api_version), body
    )


_THROTTLE_REPORTED = frozenset(
    key for key, api in ALL_APIS.items() if any(f.name == "throttle_time_ms" for f in api.response)
)
"""The APIs whose response has a ``throttle_time_ms`` (SaslHandshake, SaslAuthenticate,
DescribeQuorum and WriteTxnMarkers have none in any version)."""


def with_throttle(api_key: int, response: Response, throttle: int) -> Response:
    """The response reporting a quota's throttle time, where its API has the field (a version
    without it ignores it; an API without it in any version is told by the muted channel only:
    the encoder refuses a field its API never declares)."""
    if api_key not in _THROTTLE_REPORTED:
        return response
    return {**response, "throttle_time_ms": max(response.get("throttle_time_ms", 0), throttle)}


async def dispatch(
    broker: DispatchingNode, frame: memoryview, client_address: str, auth: ConnectionAuth, mute: ChannelMute
) -> tuple[RequestHeader, Answer]:
    """Handle one request frame; returns its header and the response buffers (None: no response,
    a ``DeferredAnswer``: buffers that are ready later).

    While client quotas are configured, a request that takes its client over one is answered
    with its throttle time and ``mute`` holds the connection's next read (``broker.requests.throttling``).

    The header is returned so the connection can name the request if answering it fails.
    On a SASL listener, a request out of the authentication sequence closes the connection.
    Every request that reaches its handler is reported to ``broker.requests.request_observer`` once its
    response is ready (metrics, request log).
    """
    started = perf_counter()
    header, offset = decode_request_header(frame)
    if auth.gated:
        try:
            auth.check_request(header.api_key)
        except AuthenticationError as exc:
            raise CloseConnection(str(exc)) from None
    support = broker.supported.get(header.api_key)
    if support is None:
        why = NOT_SERVED.get(header.api_key)
        reason = f": {why}" if why else ""
        raise CloseConnection(f"unsupported API {api_name(header.api_key)} (key {header.api_key}){reason}")
    if not support.min_version <= header.api_version <= support.max_version:
        if header.api_key == ApiKey.API_VERSIONS:
            return header, api_versions_fallback(header, broker.supported.values())
        raise CloseConnection(f"unsupported {support.name} version {header.api_version}")
    handler = broker.served[support.key].handler
    request = decode_request(header.api_key, header.api_version, frame, offset)
    ctx = RequestContext(header, broker, client_address, auth)
    with _HandlerErrors(header, client_address):
        response = await handler(ctx, request)
        throttle = 0
        if broker.quotas.enabled:
            throttle = throttle_ms(ctx, len(frame), perf_counter() - started)
            if throttle:
                mute.hold(throttle)
        if isinstance(response, PendingResponse):
            return header, DeferredAnswer(response, ctx, broker.request_observer, started, throttle)
        if throttle and response is not None:
            response = with_throttle(header.api_key, response, throttle)
        parts = None if response is None else _encode(header, response)
        broker.request_observer.finished(header, client_address, started, request, response)
        return header, parts
