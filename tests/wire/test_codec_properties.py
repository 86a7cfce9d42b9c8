"""Property tests of the generated codecs, for every declared API, version and direction.

* Round trip: any message the schema allows encodes, decodes back to itself (absent
  fields as defaults) with the decoder consuming exactly the encoded bytes, and re-encodes
  to the same bytes.
* Robustness: any truncation of a valid encoding raises ``DecodeError``; a valid encoding
  with bytes replaced, inserted or deleted, or arbitrary bytes, decode or raise
  ``DecodeError`` and nothing else.
* Coverage: every (API, version) the broker advertises is declared, so the tests above
  cover it; request headers round trip and fail only with ``DecodeError``, also in front of
  bodies as the broker reads whole frames.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.handlers import load_handlers
from broker.requests.api_support import supported_apis
from wire import codec
from wire.errors import DecodeError
from wire.header import RequestHeader, decode_request_header, encode_request_header
from wire.schemas import ALL_APIS

DIRECTIONS = ("request", "response")
# One test per API and direction, each example covering every version: every version is
# exercised on every run, without paying pytest's and hypothesis' per-test overhead
# hundreds of times.
EVERY_VERSION = settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
INTERESTING_BYTES = st.sampled_from((0x00, 0x01, 0x7F, 0x80, 0xFF)) | st.integers(0, 255)
# (position modulo length + 1, action, byte); at the end only an insert changes anything.
DAMAGE = st.lists(
    st.tuples(st.integers(0, 2**16), st.sampled_from(("replace", "insert", "delete")), INTERESTING_BYTES),
    min_size=1,
    max_size=4,
)


def _decode(api_key: int, version: int, direction: str, data: bytes) -> dict:
    decode = codec.decode_request if direction == "request" else codec.decode_response
    return decode(api_key, version, data)


def _decode_or_error(api_key: int, version: int, direction: str, data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        _decode(api_key, version, direction, data)


@pytest.mark.parametrize("direction", DIRECTIONS)
@EVERY_VERSION
@given(data=st.data())
def test_round_trip_and_damage(schema_messages, api_key, direction, data) -> None:
    for version in ALL_APIS[api_key].versions:
        message = data.draw(schema_messages.strategy(api_key, version, direction), label=f"v{version}")
        _check_round_trip(schema_messages, api_key, version, direction, message)
        encoded = codec.get_codec(api_key, version, direction).encode(message)
        if encoded:
            cut = data.draw(st.integers(0, len(encoded) - 1), label=f"v{version} cut")
            with pytest.raises(DecodeError):
                _decode(api_key, version, direction, encoded[:cut])
        damage = data.draw(DAMAGE, label=f"v{version} damage")
        _decode_or_error(api_key, version, direction, _damaged(encoded, damage))


def _check_round_trip(schema_messages, api_key: int, version: int, direction: str, message: dict) -> None:
    generated = codec.get_codec(api_key, version, direction)
    encoded = generated.encode(message)
    decoded, end = generated.decode(memoryview(encoded), 0)
    assert end == len(encoded)
    assert decoded == schema_messages.expected(api_key, version, direction, message)
    assert generated.encode(decoded) == encoded


def _damaged(encoded: bytes, damage: list[tuple[int, str, int]]) -> bytes:
    damaged = bytearray(encoded)
    for where, action, byte in damage:
        position = where % (len(damaged) + 1)
        if action == "insert":
            damaged.insert(position, byte)
        elif position < len(damaged) and action == "replace":
            damaged[position] = byte
        elif position < len(damaged):
            del damaged[position]
    return bytes(damaged)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_decode_arbitrary_bytes(api_key, data) -> None:
    version = data.draw(st.sampled_from(list(ALL_APIS[api_key].versions)), label="version")
    direction = data.draw(st.sampled_from(DIRECTIONS), label="direction")
    _decode_or_error(api_key, version, direction, data.draw(st.binary(max_size=96), label="bytes"))


SUPPORTED = supported_apis(load_handlers())
ADVERTISED = [(s.key, v) for s in SUPPORTED.values() for v in range(s.min_version, s.max_version + 1)]
CLIENT_IDS = st.none() | st.text(max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    api_version=st.sampled_from(ADVERTISED)
    | st.tuples(st.integers(-(2**15), 2**15 - 1), st.integers(-(2**15), 2**15 - 1)),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    client_id=CLIENT_IDS,
    cut=st.integers(0, 2**16),
)
def test_request_header_round_trip_and_truncation(api_version, correlation_id, client_id, cut) -> None:
    """Any header, for advertised and unknown (API, version) alike, decodes back to itself
    (v2 for flexible versions, v1 otherwise) and any truncation of it is a DecodeError."""
    api_key, version = api_version
    encoded = encode_request_header(api_key, version, correlation_id, client_id)
    assert decode_request_header(encoded + b"body") == (
        RequestHeader(api_key, version, correlation_id, client_id),
        len(encoded),
    )
    with pytest.raises(DecodeError):
        decode_request_header(encoded[: cut % len(encoded)])


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_frames_as_the_broker_reads_them(data) -> None:
    """What dispatch does with a frame: header, then the body of an advertised version.
    A valid header followed by damaged or arbitrary bytes, or arbitrary bytes alone, may
    only raise DecodeError."""
    api_key, version = data.draw(st.sampled_from(ADVERTISED), label="api")
    header = encode_request_header(api_key, version, 1, data.draw(CLIENT_IDS, label="client id"))
    frame = data.draw(st.just(header) | st.binary(max_size=16), label="head") + data.draw(
        st.binary(max_size=128), label="rest"
    )
    with contextlib.suppress(DecodeError):
        parsed, offset = decode_request_header(frame)
        if (parsed.api_key, parsed.api_version) in ADVERTISED:
            codec.decode_request(parsed.api_key, parsed.api_version, frame, offset)
