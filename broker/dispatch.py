"""From one request frame to the bytes of its response.

Decoding, version checks, handler lookup and response encoding live here so that every API
gets the same treatment: an unknown API or version closes the connection (as Kafka's
SocketServer does), except ApiVersions, which answers any version with a v0 body carrying
``UNSUPPORTED_VERSION`` and our ranges so the client can retry at a version we speak.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import struct
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from broker import handlers as handlers_package
from broker.api_support import ApiSupport, Served
from broker.context import PendingResponse, RequestContext
from log.disk_error_report import describe_os_error
from wire.api_keys import ApiKey, api_name
from wire.codec import decode_request, encode_response_parts
from wire.error_codes import ErrorCode
from wire.header import RequestHeader, decode_request_header, encode_response_header, response_header_version

if TYPE_CHECKING:
    from broker.server import Broker

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")


class CloseConnection(Exception):
    """The request cannot be answered; Kafka closes the connection in these cases."""


def load_handlers() -> dict[ApiKey, Served]:
    """Collect ``HANDLERS`` from every module in ``broker.handlers`` (one per API family)."""
    found: dict[ApiKey, Served] = {}
    for module_info in pkgutil.iter_modules(handlers_package.__path__):
        module = importlib.import_module(f"{handlers_package.__name__}.{module_info.name}")
        for key, served in getattr(module, "HANDLERS", {}).items():
            if key in found:
                raise RuntimeError(f"two handlers for {key.api_name}: {module_info.name} and another module")
            found[key] = served
    return found


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


def describe_request(header: RequestHeader, client_address: str) -> str:
    """The request as an operator needs it in a log line: API, version, ids and peer."""
    return (
        f"{_name(header)} v{header.api_version} (correlation id {header.correlation_id}, "
        f"client id {header.client_id!r}) from {client_address}"
    )


class DeferredAnswer:
    """The connection's side of a :class:`PendingResponse`: its response buffers, once ready."""

    __slots__ = ("_pending", "_header", "_client_address")

    def __init__(self, pending: PendingResponse, header: RequestHeader, client_address: str) -> None:
        self._pending, self._header, self._client_address = pending, header, client_address

    async def parts(self) -> list[Any] | None:
        with _handler_errors(self._header, self._client_address):
            response = await self._pending.finish()
            return None if response is None else _encode(self._header, response)


Answer = list[Any] | DeferredAnswer | None


@contextmanager
def _handler_errors(header: RequestHeader, client_address: str) -> Iterator[None]:
    """Log a handler's failure once, at ERROR with its request, and close the connection."""
    try:
        yield
    except CloseConnection:
        raise
    except OSError as exc:
        # Handlers do no socket I/O, so this is the disk (EMFILE, ENAMETOOLONG, EIO, ...).
        log.error("%s hit a disk error: %s", describe_request(header, client_address), describe_os_error(exc))
        raise HandlerFailed(f"disk error while handling {_name(header)}") from exc
    except Exception as exc:
        log.exception(
            "internal error handling %s; closing its connection", describe_request(header, client_address)
        )
        raise HandlerFailed(f"internal error while handling {_name(header)}") from exc


def _name(header: RequestHeader) -> str:
    return api_name(header.api_key)


def _encode(header: RequestHeader, response: dict[str, Any]) -> list[Any]:
    body = encode_response_parts(header.api_key, header.api_version, response)
    return frame_response(
        header.correlation_id, response_header_version(header.api_key, header.api_version), body
    )


async def dispatch(broker: Broker, frame: memoryview, client_address: str) -> tuple[RequestHeader, Answer]:
    """Handle one request frame; returns its header and the response buffers (None: no response,
    a ``DeferredAnswer``: buffers that are ready later).

    The header is returned so the connection can name the request if answering it fails.
    """
    header, offset = decode_request_header(frame)
    support = broker.supported.get(header.api_key)
    if support is None:
        raise CloseConnection(f"unsupported API {api_name(header.api_key)} (key {header.api_key})")
    if not support.min_version <= header.api_version <= support.max_version:
        if header.api_key == ApiKey.API_VERSIONS:
            return header, api_versions_fallback(header, broker.supported.values())
        raise CloseConnection(f"unsupported {support.name} version {header.api_version}")
    handler = broker.served[support.key].handler
    request = decode_request(header.api_key, header.api_version, frame, offset)
    ctx = RequestContext(header, broker, client_address, host=client_address.rpartition(":")[0])
    with _handler_errors(header, client_address):
        response = await handler(ctx, request)
        if response is None:
            return header, None
        if isinstance(response, PendingResponse):
            return header, DeferredAnswer(response, header, client_address)
        return header, _encode(header, response)
