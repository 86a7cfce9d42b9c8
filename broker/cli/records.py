"""Records as lines for ``odradek console-produce`` and ``console-consume``.

One line per record in three formats, the same for reading and writing, so a consumer's output
can be produced again unchanged:

- ``text``: ``[TIMESTAMP<TAB>][HEADERS<TAB>][KEY<TAB>]VALUE``, each leading field present when
  its flag (``--timestamp``, ``--headers``, ``--key``) is given; headers are
  ``name:value,name:value``.  Bytes pass through as they are (a key cannot hold a tab, a header
  value neither a comma nor a tab, and nothing a newline: use ``hex`` or ``json`` for those).
- ``hex``: the same layout with key, value and header values as hex digits.
- ``json``: one object per line, ``{"key", "value", "headers": [[name, value], ...],
  "timestamp", "partition"}``, any of them left out; null keys, values and header values are
  JSON ``null``.  Strings are the bytes as UTF-8; bytes that are not UTF-8 are carried as
  surrogate escapes, which round-trip through these commands (use ``hex`` for binary data).

Where records go without ``--partition``: keyed records to ``murmur2(key) % partitions``,
exactly as the Java client's and kafka-python's default partitioners place them, so keys stay
on the partitions applications expect; records without a key in turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from broker.cli.registry import AdminError
from wire.record_batch import Header

FORMATS = ("text", "hex", "json")
TAB, COMMA, COLON = b"\t", b",", b":"
UTF8 = "utf-8"


@dataclass(frozen=True)
class Layout:
    """Which optional fields a text or hex line carries, in this order, before the value."""

    format: str
    timestamp: bool
    headers: bool
    key: bool


@dataclass(frozen=True)
class InputRecord:
    """A record to produce; ``partition``/``timestamp`` None means "choose" / "now"."""

    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp: int | None
    partition: int | None


def _text(data: bytes) -> str:
    return data.decode(UTF8, "surrogateescape")


def _bytes(text: str) -> bytes:
    return text.encode(UTF8, "surrogateescape")


def _unhex(field: bytes, what: str) -> bytes:
    try:
        return bytes.fromhex(field.decode("ascii"))
    except ValueError as exc:
        raise AdminError(f"{what} is not hex digits: {field[:40]!r}") from exc


def _json_bytes(value: Any, what: str) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise AdminError(f"{what} must be a string or null, got {json.dumps(value)[:40]}")
    return _bytes(value)


def _parse_json(line: bytes) -> InputRecord:
    try:
        entry = json.loads(line)
    except ValueError as exc:
        raise AdminError(f"not a JSON object: {exc}") from exc
    if not isinstance(entry, dict):
        raise AdminError("each line must be a JSON object")
    raw_headers = entry.get("headers") or []
    if isinstance(raw_headers, dict):
        raw_headers = list(raw_headers.items())
    headers = []
    for pair in raw_headers:
        if not (isinstance(pair, list | tuple) and len(pair) == 2 and isinstance(pair[0], str)):
            raise AdminError('"headers" must be [[name, value], ...] or {name: value}')
        headers.append((pair[0], _json_bytes(pair[1], f"header {pair[0]!r}")))
    numbers = {}
    for name in ("timestamp", "partition"):
        number = entry.get(name)
        if number is not None and (not isinstance(number, int) or isinstance(number, bool)):
            raise AdminError(f'"{name}" must be an integer')
        numbers[name] = number
    return InputRecord(
        _json_bytes(entry.get("key"), "key"),
        _json_bytes(entry.get("value"), "value"),
        tuple(headers),
        numbers["timestamp"],
        numbers["partition"],
    )


def _parse_headers(field: bytes, decode: bool) -> tuple[Header, ...]:
    headers = []
    for item in field.split(COMMA) if field else []:
        name, colon, value = item.partition(COLON)
        if not colon:
            raise AdminError(f"header {item[:40]!r} is not name:value")
        headers.append((_text(name), _unhex(value, "header value") if decode else value))
    return tuple(headers)


def parse_line(line: bytes, layout: Layout) -> InputRecord:
    """One input line (without its newline) as a record; ``AdminError`` says what is wrong."""
    if layout.format == "json":
        return _parse_json(line)
    leading = layout.timestamp + layout.headers + layout.key
    fields = line.split(TAB, leading)
    if len(fields) <= leading:
        raise AdminError(f"expected {leading + 1} tab-separated fields, got {len(fields)}")
    decode = layout.format == "hex"
    timestamp = None
    if layout.timestamp:
        text = fields.pop(0)
        if not text.lstrip(b"-").isdigit():
            raise AdminError(f"timestamp {text[:40]!r} is not milliseconds since the epoch")
        timestamp = int(text)
    headers = _parse_headers(fields.pop(0), decode) if layout.headers else ()
    key = fields.pop(0) if layout.key else None
    value = fields[0]
    if decode:
        key = None if key is None else _unhex(key, "key")
        value = _unhex(value, "value")
    return InputRecord(key, value, headers, timestamp, None)


def format_record(
    topic: str, partition: int, offset: int, timestamp_type: str, record: Any, layout: Layout
) -> bytes:
    """One output line (without its newline) for a consumed ``wire.record_batch.Record``."""
    if layout.format == "json":
        entry = {
            "topic": topic,
            "partition": partition,
            "offset": offset,
            "timestamp": record.timestamp,
            "timestampType": timestamp_type,
            "key": None if record.key is None else _text(record.key),
            "value": None if record.value is None else _text(record.value),
            "headers": [[name, None if value is None else _text(value)] for name, value in record.headers],
        }
        return json.dumps(entry).encode()
    encode = (lambda data: data.hex().encode()) if layout.format == "hex" else (lambda data: data)
    fields = []
    if layout.timestamp:
        fields.append(str(record.timestamp).encode())
    if layout.headers:
        fields.append(
            COMMA.join(name.encode() + COLON + encode(value or b"") for name, value in record.headers)
        )
    if layout.key:
        fields.append(encode(record.key or b""))
    fields.append(encode(record.value or b""))
    return TAB.join(fields)


MURMUR_SEED, MURMUR_M = 0x9747B28C, 0x5BD1E995
MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (``org.apache.kafka.common.utils.Utils.murmur2``) as an unsigned 32-bit int."""
    length = len(data)
    h = (MURMUR_SEED ^ length) & MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = (int.from_bytes(data[i : i + 4], "little") * MURMUR_M) & MASK32
        k = ((k ^ (k >> 24)) * MURMUR_M) & MASK32
        h = ((h * MURMUR_M) & MASK32) ^ k
    tail = data[whole:]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h = ((h ^ tail[0]) * MURMUR_M) & MASK32
    h = ((h ^ (h >> 13)) * MURMUR_M) & MASK32
    return h ^ (h >> 15)


def partition_for_key(key: bytes, partitions: int) -> int:
    """The Java client's default partition for a keyed record: positive murmur2 modulo the count."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions
