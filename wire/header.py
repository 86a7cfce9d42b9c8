"""Request and response headers.

The header must be decodable before the broker knows whether it can handle the request:
a client may open with a version (or an API) we do not support, and the broker still has
to answer with ``UNSUPPORTED_VERSION`` under the right correlation id.  So the request
header is parsed from its fixed part, which is the same in every header version, and its
tagged fields (header v2) are read only when the schema says the request version is
flexible; unknown keys are treated as header v1 and the caller decides what to do.

Header versions: request v1 = api_key int16, api_version int16, correlation_id int32,
client_id nullable int16-length string; v2 adds a tagged-field section (client_id stays a
*non-compact* string).  Response v0 = correlation_id int32; v1 adds a tagged-field section.
ApiVersions responses always use v0, because clients parse them before they know which
versions the broker speaks.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from wire.api_keys import ApiKey
from wire.errors import DecodeError
from wire.primitives import EMPTY_TAGGED_FIELDS, INT32, encode_string, read_string, skip_tagged_fields
from wire.schemas import ALL_APIS

_FIXED = struct.Struct(">hhi")


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def _is_flexible(api_key: int, api_version: int) -> bool:
    api = ALL_APIS.get(api_key)
    return api is not None and api_version in api.flexible


def request_header_version(api_key: int, api_version: int) -> int:
    """2 for flexible request versions, else 1 (also for APIs we have no schema for)."""
    return 2 if _is_flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """1 for flexible response versions, else 0; ApiVersions always uses 0."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if _is_flexible(api_key, api_version) else 0


def decode_request_header(
    buf: Any,
    offset: int = 0,
    *,
    flexible: bool | None = None,
) -> tuple[RequestHeader, int]:
    """Parse a request header at ``buf[offset:]``; return it and the offset of the body.

    ``flexible`` says whether to expect header v2: by default the declarations decide
    (unknown keys and versions give v1); a bool forces it.
    """
    try:
        api_key, api_version, correlation_id = _FIXED.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError("request header shorter than 8 bytes") from None
    client_id, pos = read_string(buf, offset + _FIXED.size)
    if flexible is None:
        flexible = _is_flexible(api_key, api_version)
    if flexible:
        pos = skip_tagged_fields(buf, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def encode_request_header(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    header_version: int | None = None,
) -> bytes:
    """A request header (v1 or v2; by default the version the schema implies)."""
    if header_version is None:
        header_version = request_header_version(api_key, api_version)
    data = _FIXED.pack(api_key, api_version, correlation_id) + encode_string(client_id)
    return data + EMPTY_TAGGED_FIELDS if header_version >= 2 else data


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    """A response header: the correlation id, plus an empty tagged-field section in v1."""
    data = INT32.pack(correlation_id)
    return data + EMPTY_TAGGED_FIELDS if header_version >= 1 else data


def decode_response_header(buf: Any, offset: int, header_version: int) -> tuple[int, int]:
    """Parse a response header; return the correlation id and the offset of the body."""
    try:
        (correlation_id,) = INT32.unpack_from(buf, offset)
    except struct.error:
        raise DecodeError("response header shorter than 4 bytes") from None
    pos = offset + 4
    if header_version >= 1:
        pos = skip_tagged_fields(buf, pos)
    return correlation_id, pos
