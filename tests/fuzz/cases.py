"""Fuzz cases: the bytes one case sends, and what the broker may legitimately do with them.

Every case starts from a valid request for an advertised (API, version) (see
:mod:`tests.fuzz.messages`) and then lies in one way: flipped bits, a cut body, a stream that
stops mid-frame, huge counts and lengths written over fields, noise, a bogus size prefix, a
version or API the broker does not speak, or several requests pipelined.  Case ``n`` of seed
``s`` is drawn from its own ``random.Random`` and so can be replayed alone.

What the harness needs to know about a case is decided here from the bytes themselves:

* ``complete``: the bytes are a whole number of frames.  Then the harness pipelines a probe
  request behind them and expects, within the deadline, either the probe's answer (the
  connection survived and every earlier request was answered or, for ``acks=0``, dropped)
  or a closed connection.  An incomplete stream is followed by a half-close instead: the
  broker cannot answer what it never fully received, but it must notice the end and close.
* ``may_park``: the broker may legitimately hold the request for longer than any deadline
  the harness could afford: a Fetch whose (mutated) ``max_wait_ms`` is long, or a
  JoinGroup/SyncGroup, which wait for the other members of a group the fuzzer itself
  populates.  For those the harness gives up after a short wait and closes its end; that the
  broker then releases everything is checked by the descriptor comparison at the end.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

from broker.handlers import load_handlers
from broker.requests.api_support import supported_apis
from tests.fuzz.messages import INTERESTING_INTS, MessageGenerator
from wire import codec
from wire.api_keys import ApiKey
from wire.errors import WireError
from wire.header import decode_request_header, encode_request_header

SUPPORTED = supported_apis(load_handlers())
PARKING_FETCH_MS = 1_000
MAX_REQUEST_BYTES = 104_857_600  # socket.request.max.bytes default: larger prefixes are refused
_SIZE = struct.Struct(">i")
_HUGE_INT32 = (2**31 - 1, 2**31 - 2, -1, -(2**31), 0x40000000, 1_000_000)
# A huge unsigned varint (compact lengths and array counts of flexible versions).
_HUGE_VARINTS = (
    b"\xff\xff\xff\xff\x0f",
    b"\xfe\xff\xff\xff\x07",
    b"\x80\x80\x80\x80\x10",
    b"\xff\xff\xff\x7f",
)
_BOGUS_SIZES = (-1, -(2**31), 0, 1, 3, 2**31 - 1, MAX_REQUEST_BYTES, MAX_REQUEST_BYTES + 1, 50_000_000)
_ADVERTISED = tuple(SUPPORTED.values())
# Produce and Fetch are the hot path and carry record sets: draw them more often.
_API_WEIGHTS = tuple(6 if s.key in (ApiKey.PRODUCE, ApiKey.FETCH) else 1 for s in _ADVERTISED)


@dataclass(frozen=True)
class FuzzCase:
    index: int
    kind: str
    data: bytes
    complete: bool
    may_park: bool
    apis: str  # the APIs its whole frames claim in their headers, for reports

    def label(self) -> str:
        return f"case {self.index} ({self.kind}: {self.apis})"

    def describe(self) -> str:
        return f"{self.label()}, {len(self.data)} bytes: {self.data[:200].hex()}"


def make_case(seed: int, index: int) -> FuzzCase:
    """Case ``index`` of the run seeded ``seed`` (deterministic)."""
    rng = random.Random(f"{seed}:{index}")
    kind, mutate = rng.choices(_MUTATIONS, weights=_MUTATION_WEIGHTS)[0]
    data = mutate(rng, MessageGenerator(rng))
    complete, frames = split_frames(data)
    apis = " ".join(_api_name(frame) for frame in frames) or "no whole frame"
    return FuzzCase(index, kind, data, complete, any(_may_park(frame) for frame in frames), apis)


def split_frames(data: bytes) -> tuple[bool, list[bytes]]:
    """The whole frames at the start of ``data``, and whether nothing else follows them."""
    frames, position = [], 0
    while position + 4 <= len(data):
        (size,) = _SIZE.unpack_from(data, position)
        if size < 0 or size > MAX_REQUEST_BYTES or position + 4 + size > len(data):
            return False, frames
        frames.append(data[position + 4 : position + 4 + size])
        position += 4 + size
    return position == len(data), frames


def _api_name(frame: bytes) -> str:
    if len(frame) < 4:
        return "?"
    api_key, version = struct.unpack_from(">hh", frame)
    support = SUPPORTED.get(api_key)
    return f"{support.name if support else api_key} v{version}"


def _may_park(frame: bytes) -> bool:
    try:
        header, offset = decode_request_header(frame)
        if header.api_key in (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP):
            return True
        if header.api_key != ApiKey.FETCH:
            return False
        request = codec.decode_request(ApiKey.FETCH, header.api_version, frame, offset)
    except (WireError, KeyError, ValueError):
        return False
    return request["max_wait_ms"] > PARKING_FETCH_MS


def _framed(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


def _valid_request(rng: random.Random, messages: MessageGenerator) -> bytes:
    """A valid request (header and body, no size prefix) for an advertised API and version."""
    support = rng.choices(_ADVERTISED, weights=_API_WEIGHTS)[0]
    version = rng.randint(support.min_version, support.max_version)
    return _encoded(rng, support.key, version, messages.request(support.key, version))


def _encoded(rng: random.Random, api_key: int, version: int, body: dict) -> bytes:
    header = encode_request_header(
        api_key, version, rng.randint(0, 2**31 - 1), rng.choice(("fuzz", None, ""))
    )
    return header + codec.encode_request(api_key, version, body)


def _valid(rng: random.Random, messages: MessageGenerator) -> bytes:
    return _framed(_valid_request(rng, messages))


def _bit_flips(rng: random.Random, messages: MessageGenerator) -> bytes:
    request = bytearray(_valid_request(rng, messages))
    for _ in range(rng.randint(1, 8)):
        request[rng.randrange(len(request))] ^= 1 << rng.randrange(8)
    return _framed(bytes(request))


def _truncated_body(rng: random.Random, messages: MessageGenerator) -> bytes:
    request = _valid_request(rng, messages)
    return _framed(request[: rng.randrange(len(request))])


def _short_stream(rng: random.Random, messages: MessageGenerator) -> bytes:
    frame = _valid(rng, messages)
    return frame[: rng.randrange(len(frame))]


def _huge_number(rng: random.Random, messages: MessageGenerator) -> bytes:
    """A huge count or length written over the body at a random position (past the fixed
    part of the header, where lengths and counts live)."""
    request = bytearray(_valid_request(rng, messages))
    position = rng.randint(8, max(8, len(request) - 1))
    if rng.random() < 0.5:
        request[position : position + 4] = _SIZE.pack(rng.choice(_HUGE_INT32))
    else:
        request[position : position + 1] = rng.choice(_HUGE_VARINTS)
    return _framed(bytes(request))


def _noise(rng: random.Random, _messages: MessageGenerator) -> bytes:
    return _framed(rng.randbytes(rng.choice((0, 1, 7, 8, 20, 200))))


def _bogus_size(rng: random.Random, messages: MessageGenerator) -> bytes:
    request = _valid_request(rng, messages)
    size = rng.choice((*_BOGUS_SIZES, len(request) + rng.randint(1, 1000), max(0, len(request) - 1)))
    return _SIZE.pack(size) + request


def _wrong_version(rng: random.Random, messages: MessageGenerator) -> bytes:
    """A valid body under a header naming a version (or API) the broker does not advertise."""
    request = bytearray(_valid_request(rng, messages))
    if rng.random() < 0.3:
        struct.pack_into(">h", request, 0, rng.choice((-1, 4, 99, 32767, *range(50, 60))))
    else:
        struct.pack_into(">h", request, 2, max(-(2**15), min(2**15 - 1, rng.choice(INTERESTING_INTS))))
    return _framed(bytes(request))


def _parked_fetch(rng: random.Random, messages: MessageGenerator) -> bytes:
    """A Fetch that waits as long as the protocol allows (huge ``max_wait_ms`` and
    ``min_bytes``); the harness hangs up on it, and the broker must then let it go."""
    version = rng.randint(SUPPORTED[ApiKey.FETCH].min_version, SUPPORTED[ApiKey.FETCH].max_version)
    request = messages.request(ApiKey.FETCH, version) | {"max_wait_ms": 2**31 - 1, "min_bytes": 2**31 - 1}
    return _framed(_encoded(rng, ApiKey.FETCH, version, request))


def _pipelined(rng: random.Random, messages: MessageGenerator) -> bytes:
    return b"".join(_valid(rng, messages) for _ in range(rng.randint(2, 5)))


_MUTATION_TABLE = (
    ("valid", _valid, 15),
    ("bit_flips", _bit_flips, 20),
    ("truncated_body", _truncated_body, 10),
    ("short_stream", _short_stream, 6),
    ("huge_number", _huge_number, 20),
    ("noise", _noise, 5),
    ("bogus_size", _bogus_size, 6),
    ("wrong_version", _wrong_version, 8),
    ("pipelined", _pipelined, 10),
    ("parked_fetch", _parked_fetch, 1),
)
_MUTATIONS = tuple((name, mutate) for name, mutate, _ in _MUTATION_TABLE)
_MUTATION_WEIGHTS = tuple(weight for _, _, weight in _MUTATION_TABLE)
