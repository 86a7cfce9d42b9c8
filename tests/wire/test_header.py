"""Request/response header tests: hand-computed bytes, version rules, unknown APIs."""

from __future__ import annotations

import pytest

from wire.api_keys import ApiKey
from wire.errors import DecodeError
from wire.header import (
    RequestHeader,
    decode_request_header,
    decode_response_header,
    encode_request_header,
    encode_response_header,
    request_header_version,
    response_header_version,
)

# ApiVersions v3, correlation id 42, client id "client": header v2 (flexible request).
HEADER_V2 = bytes.fromhex("0012" "0003" "0000002a" "0006" "636c69656e74" "00")  # fmt: skip


def test_request_header_v2_bytes() -> None:
    assert encode_request_header(ApiKey.API_VERSIONS, 3, 42, "client") == HEADER_V2
    header, body_offset = decode_request_header(HEADER_V2 + b"body")
    assert header == RequestHeader(ApiKey.API_VERSIONS, 3, 42, "client")
    assert body_offset == len(HEADER_V2)


def test_request_header_v1_has_no_tagged_fields() -> None:
    data = encode_request_header(ApiKey.API_VERSIONS, 2, 7, None)
    assert data == bytes.fromhex("0012" "0002" "00000007" "ffff")  # fmt: skip
    assert decode_request_header(data) == (RequestHeader(ApiKey.API_VERSIONS, 2, 7, None), len(data))


def test_header_tagged_fields_are_skipped() -> None:
    data = HEADER_V2[:-1] + b"\x01\x05\x02hi"  # one unknown tag (5) of 2 bytes
    header, body_offset = decode_request_header(data + b"body", 0)
    assert header.client_id == "client"
    assert body_offset == len(data)


def test_unknown_api_is_read_as_header_v1() -> None:
    data = encode_request_header(9999, 7, 1, "c")
    assert len(data) == 11
    header, body_offset = decode_request_header(b"xx" + data + b"\x00", 2)
    assert header == RequestHeader(9999, 7, 1, "c")
    assert body_offset == 2 + 11


def test_caller_decides_flexibility() -> None:
    data = encode_request_header(9999, 7, 1, "c", header_version=2)
    assert decode_request_header(data, flexible=True)[1] == len(data)
    assert decode_request_header(HEADER_V2, flexible=False)[1] == len(HEADER_V2) - 1


@pytest.mark.parametrize("length", range(len(HEADER_V2)))
def test_truncated_request_header(length: int) -> None:
    with pytest.raises(DecodeError):
        decode_request_header(HEADER_V2[:length])


def test_header_versions() -> None:
    assert (
        request_header_version(ApiKey.API_VERSIONS, 2),
        response_header_version(ApiKey.API_VERSIONS, 2),
    ) == (1, 0)
    # ApiVersions responses always use header v0, even when the request is flexible.
    assert (
        request_header_version(ApiKey.API_VERSIONS, 3),
        response_header_version(ApiKey.API_VERSIONS, 3),
    ) == (2, 0)
    assert (request_header_version(ApiKey.METADATA, 8), response_header_version(ApiKey.METADATA, 8)) == (1, 0)
    assert (request_header_version(ApiKey.METADATA, 9), response_header_version(ApiKey.METADATA, 9)) == (2, 1)
    assert (request_header_version(9999, 0), response_header_version(9999, 0)) == (1, 0)


def test_response_headers() -> None:
    assert encode_response_header(ApiKey.DELETE_GROUPS, 0) == b"\x00\x00\x00\x2a"
    assert encode_response_header(ApiKey.DELETE_GROUPS, 1) == b"\x00\x00\x00\x2a\x00"
    assert decode_response_header(b"\x00\x00\x00\x2a\x00body", 0, 1) == (42, 5)
    assert decode_response_header(b"\x00\x00\x00\x2a\x00body", 0, 0) == (42, 4)
    with pytest.raises(DecodeError):
        decode_response_header(b"\x00\x00", 0, 0)
