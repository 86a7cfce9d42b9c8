"""Public entry points: encode and decode request and response bodies by (API key, version).

Codecs are generated on first use and cached, so each (key, version, direction) is
compiled once per process; :func:`prepare_all` generates every one up front (the tests call
it to validate every declaration).

Decoding reads one body starting at ``offset`` and ignores any bytes after it, as Kafka
does (newer clients may append fields we do not know to a request we think we know).
Every malformed input raises :class:`~wire.errors.DecodeError`; every unencodable value
raises :class:`~wire.errors.EncodeError`; an unknown key or version raises
:class:`~wire.errors.UnsupportedVersion`.
"""

from __future__ import annotations

import functools
import struct
from typing import Any

from wire.codegen import MAX_REQUEST_ELEMENTS, Codec, Direction, Message, Outgoing, generate
from wire.errors import DecodeError, EncodeError, UnsupportedVersion
from wire.schemas import ALL_APIS

# What generated code raises when the input or a value is bad rather than our code:
# reading past the end of the input, invalid UTF-8, wrong value types, out-of-range ints.
DECODE_FAILURES = (struct.error, IndexError, ValueError, OverflowError, MemoryError, RecursionError)
ENCODE_FAILURES = (EncodeError, struct.error, TypeError, AttributeError, ValueError, OverflowError)


@functools.cache
def get_codec(api_key: int, version: int, direction: Direction) -> Codec:
    """The generated codec of one message version (generated once, then cached)."""
    api = ALL_APIS.get(api_key)
    if api is None:
        raise UnsupportedVersion(f"unknown API key {api_key}")
    if version not in api.versions:
        raise UnsupportedVersion(f"{api.name} (key {api_key}) has no version {version}")
    return generate(api, version, direction)


def prepare_all() -> int:
    """Generate every codec of every declared API; return how many were generated."""
    count = 0
    for api in ALL_APIS.values():
        for version in api.versions:
            for direction in ("request", "response"):
                get_codec(api.key, version, direction)
                count += 1
    return count


def decode_request(
    api_key: int, version: int, buf: Any, offset: int = 0, max_elements: int = MAX_REQUEST_ELEMENTS
) -> Message:
    """Decode a request body (the bytes after the request header) from ``buf[offset:]``; a
    request whose arrays hold more than ``max_elements`` elements in all is a DecodeError."""
    return _decode(get_codec(api_key, version, "request"), buf, offset, max_elements)


def decode_response(api_key: int, version: int, buf: Any, offset: int = 0) -> Message:
    """Decode a response body (the bytes after the response header) from ``buf[offset:]``."""
    return _decode(get_codec(api_key, version, "response"), buf, offset)


def encode_request(api_key: int, version: int, body: Outgoing) -> bytes:
    """Encode a request body (without header or size prefix)."""
    return b"".join(_encode_parts(get_codec(api_key, version, "request"), body))


def encode_response(api_key: int, version: int, body: Outgoing) -> bytes:
    """Encode a response body (without header or size prefix)."""
    return b"".join(encode_response_parts(api_key, version, body))


def encode_response_parts(api_key: int, version: int, body: Outgoing) -> list[Any]:
    """Encode a response body as the list of its parts, without joining them.

    ``records`` values appear in the list exactly as given, so the I/O layer can send them
    without a copy: a memoryview with ``sendmsg``, or any object with ``__len__`` that stands
    for a file range (the broker's ``FileRegion``) with ``sendfile``.
    """
    return _encode_parts(get_codec(api_key, version, "response"), body)


def _decode(generated: Codec, buf: Any, offset: int, *limits: int) -> Message:
    view = memoryview(buf)
    if view.format != "B":
        view = view.cast("B")
    if not 0 <= offset <= len(view):
        raise ValueError(f"offset {offset} outside a buffer of {len(view)} bytes")
    try:
        message, _end = generated.decode(view, offset, *limits)
    except DECODE_FAILURES as exc:
        raise DecodeError(f"{generated.label}: {exc}") from exc
    return message


def _encode_parts(generated: Codec, body: Outgoing) -> list[Any]:
    try:
        return generated.encode_parts(body)
    except ENCODE_FAILURES as exc:
        raise EncodeError(f"{generated.label}: {exc}") from exc
