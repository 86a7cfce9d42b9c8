"""Kafka's primitive encodings: fixed-width integers, varints, strings, bytes, array lengths.

The generated codecs (:mod:`wire.codegen`) pack runs of fixed-width fields with their own
merged ``struct.Struct`` objects and call the helpers here only for variable-length items,
so these helpers are on the hot path: they avoid per-byte loops except inside varints (at
most 5 or 10 bytes) and slice instead of copying where the caller wants a view.

Decoding helpers take ``(buf, pos)`` with ``buf`` a byte-format ``memoryview`` (or ``bytes``)
and return ``(value, new_pos)``.  They raise :class:`~wire.errors.DecodeError` for anything
malformed, and check every length against the bytes that remain *before* allocating, so a
hostile length can never make the broker allocate or loop beyond the size of the input.

Null encodings: non-compact strings use an int16 length and bytes/arrays an int32 length,
where any negative length means null (Kafka reads ``length < 0`` as null); compact types
use an unsigned varint of ``length + 1`` where 0 means null.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from wire.errors import DecodeError, EncodeError

Buffer = bytes | bytearray | memoryview

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")

INT32_MAX = 2**31 - 1
"""Kafka's ``Integer.MAX_VALUE``, declared once for every layer: the bound of int-typed settings,
of an offset relative to its segment's base, and where sequence numbers and epochs wrap."""

#: ``struct`` format code and width of each fixed-width schema type; ``uuid`` is 16 raw bytes.
FIXED_TYPES: dict[str, tuple[str, int]] = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "int32": ("i", 4),
    "int64": ("q", 8),
    "uint16": ("H", 2),
    "float64": ("d", 8),
    "uuid": ("16s", 16),
}

NULL_STRING = INT16.pack(-1)
NULL_INT32_LENGTH = INT32.pack(-1)
COMPACT_NULL = b"\x00"
EMPTY_TAGGED_FIELDS = b"\x00"

# One-byte varints are by far the most common (lengths and counts below 128).
_SMALL_UVARINTS = tuple(bytes((i,)) for i in range(128))


# --- varints ---------------------------------------------------------------------------


def _read_unsigned(buf: Buffer, pos: int, max_bytes: int) -> tuple[int, int]:
    try:
        byte = buf[pos]
        if byte < 0x80:
            return byte, pos + 1
        value = byte & 0x7F
        shift = 7
        for _ in range(max_bytes - 1):
            pos += 1
            byte = buf[pos]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value, pos + 1
            shift += 7
    except IndexError:
        raise DecodeError(f"truncated varint at offset {pos}") from None
    raise DecodeError(f"varint longer than {max_bytes} bytes at offset {pos}")


def read_uvarint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Unsigned varint of at most 5 bytes (Kafka's ``readUnsignedVarint``)."""
    return _read_unsigned(buf, pos, 5)


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Zigzag-encoded signed 32-bit varint (record fields)."""
    raw, pos = _read_unsigned(buf, pos, 5)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Zigzag-encoded signed 64-bit varint (record timestamp and offset deltas)."""
    raw, pos = _read_unsigned(buf, pos, 10)
    return (raw >> 1) ^ -(raw & 1), pos


def encode_uvarint(value: int) -> bytes:
    """Unsigned varint; lengths and counts in flexible versions use it."""
    if 0 <= value < 0x80:
        return _SMALL_UVARINTS[value]
    if value < 0 or value > 0xFFFFFFFF:
        raise EncodeError(f"unsigned varint out of range: {value}")
    return _encode_unsigned(value)


def encode_varint(value: int) -> bytes:
    """Zigzag signed 32-bit varint."""
    if not -0x80000000 <= value <= 0x7FFFFFFF:
        raise EncodeError(f"varint out of range: {value}")
    return _encode_unsigned((value << 1) ^ (value >> 31))


def encode_varlong(value: int) -> bytes:
    """Zigzag signed 64-bit varint."""
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise EncodeError(f"varlong out of range: {value}")
    return _encode_unsigned((value << 1) ^ (value >> 63))


def _encode_unsigned(raw: int) -> bytes:
    """Seven bits a byte, least significant first; the high bit says another byte follows."""
    if raw < 0x80:
        return _SMALL_UVARINTS[raw]
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


# --- lengths -----------------------------------------------------------------------------


def _compact_length(buf: Buffer, pos: int) -> tuple[int, int]:
    """A compact length prefix (uvarint n+1) as ``(n, new_pos)``; n is -1 for null."""
    try:
        raw = buf[pos]
    except IndexError:
        raise DecodeError(f"truncated length at offset {pos}") from None
    if raw < 0x80:
        return raw - 1, pos + 1
    raw, pos = _read_unsigned(buf, pos, 5)
    return raw - 1, pos


def _int_length(buf: Buffer, pos: int, prefix: struct.Struct) -> int:
    try:
        return prefix.unpack_from(buf, pos)[0]
    except struct.error:
        raise DecodeError(f"truncated length at offset {pos}") from None


def _end_of(buf: Buffer, pos: int, length: int) -> int:
    """Where the ``length`` bytes at ``pos`` end; raises when ``buf`` holds fewer."""
    end = pos + length
    if end > len(buf):
        raise _past_end(buf, pos, length)
    return end


def _past_end(buf: Buffer, pos: int, length: int) -> DecodeError:
    return DecodeError(f"{length} bytes at offset {pos} run past the end of {len(buf)}")


def _too_many(buf: Buffer, pos: int, count: int) -> DecodeError:
    return DecodeError(f"{count} elements at offset {pos} cannot fit in the {len(buf)} bytes")


def _array_count(buf: Buffer, pos: int, count: int, min_element_size: int) -> tuple[int | None, int]:
    """A read count as None for null, refused when its elements cannot fit in the bytes left."""
    if count < 0:
        return None, pos
    if count * min_element_size > len(buf) - pos:
        raise _too_many(buf, pos, count)
    return count, pos


def read_array_length(buf: Buffer, pos: int, min_element_size: int) -> tuple[int | None, int]:
    """Non-compact array count (int32, negative = null), bounded by the bytes left."""
    return _array_count(buf, pos + 4, _int_length(buf, pos, INT32), min_element_size)


def read_compact_array_length(buf: Buffer, pos: int, min_element_size: int) -> tuple[int | None, int]:
    """Compact array count (uvarint n+1, 0 = null), bounded by the bytes left."""
    count, pos = _compact_length(buf, pos)
    return _array_count(buf, pos, count, min_element_size)


def array_length(values: Sequence[Any] | None) -> bytes:
    """Non-compact array count prefix."""
    return NULL_INT32_LENGTH if values is None else INT32.pack(len(values))


def compact_array_length(values: Sequence[Any] | None) -> bytes:
    """Compact array count prefix."""
    return COMPACT_NULL if values is None else encode_uvarint(len(values) + 1)


# --- strings -----------------------------------------------------------------------------


def _utf8(buf: Buffer, pos: int, length: int) -> tuple[str | None, int]:
    if length < 0:
        return None, pos
    end = _end_of(buf, pos, length)
    try:
        return str(buf[pos:end], "utf-8"), end
    except UnicodeDecodeError:
        raise DecodeError(f"invalid UTF-8 in string at offset {pos}") from None


def read_string(buf: Buffer, pos: int) -> tuple[str | None, int]:
    """Non-compact string: int16 length (negative = null) then UTF-8 bytes."""
    return _utf8(buf, pos + 2, _int_length(buf, pos, INT16))


def read_compact_string(buf: Buffer, pos: int) -> tuple[str | None, int]:
    """Compact string: uvarint length+1 (0 = null) then UTF-8 bytes."""
    length, pos = _compact_length(buf, pos)
    return _utf8(buf, pos, length)


def encode_string(value: str | None) -> bytes:
    """Non-compact string with its int16 length; None encodes as null."""
    if value is None:
        return NULL_STRING
    data = _string_bytes(value)
    return INT16.pack(len(data)) + data


def encode_compact_string(value: str | None) -> bytes:
    """Compact string with its uvarint length+1; None encodes as null."""
    if value is None:
        return COMPACT_NULL
    data = _string_bytes(value)
    return encode_uvarint(len(data) + 1) + data


def _string_bytes(value: str) -> bytes:
    """``value`` in UTF-8; Kafka strings hold at most 32767 bytes, compact ones too."""
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise EncodeError(f"string of {len(data)} bytes is longer than 32767")
    return data


# --- bytes and records -------------------------------------------------------------------


def _copy(buf: Buffer, pos: int, length: int) -> tuple[bytes | None, int]:
    if length < 0:
        return None, pos
    end = _end_of(buf, pos, length)
    return bytes(buf[pos:end]), end


def _view(buf: memoryview, pos: int, length: int) -> tuple[memoryview | None, int]:
    if length < 0:
        return None, pos
    end = _end_of(buf, pos, length)
    return buf[pos:end], end


def read_bytes(buf: Buffer, pos: int) -> tuple[bytes | None, int]:
    """Non-compact bytes (int32 length, negative = null), copied: such fields are small."""
    return _copy(buf, pos + 4, _int_length(buf, pos, INT32))


def read_compact_bytes(buf: Buffer, pos: int) -> tuple[bytes | None, int]:
    """Compact bytes (uvarint length+1, 0 = null), copied."""
    length, pos = _compact_length(buf, pos)
    return _copy(buf, pos, length)


def read_records(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    """Non-compact record set as a zero-copy slice of ``buf`` (may be megabytes)."""
    return _view(buf, pos + 4, _int_length(buf, pos, INT32))


def read_compact_records(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    """Compact record set as a zero-copy slice of ``buf``."""
    length, pos = _compact_length(buf, pos)
    return _view(buf, pos, length)


def byte_size(value: Buffer) -> int:
    """Size in bytes of a bytes-like value (``len`` of a memoryview counts items, not bytes)."""
    return value.nbytes if isinstance(value, memoryview) else len(value)


def bytes_length(value: Buffer | None) -> bytes:
    """Non-compact bytes/records length prefix; the caller writes the data itself (no copy)."""
    return NULL_INT32_LENGTH if value is None else INT32.pack(byte_size(value))


def compact_bytes_length(value: Buffer | None) -> bytes:
    """Compact bytes/records length prefix; the caller writes the data itself."""
    return COMPACT_NULL if value is None else encode_uvarint(byte_size(value) + 1)


# --- uuids and arrays of fixed-width values ----------------------------------------------


def check_uuid(value: Buffer) -> Buffer:
    """Return ``value`` if it is 16 bytes; ``struct``'s ``16s`` would silently pad it."""
    if byte_size(value) != 16:
        raise EncodeError(f"a uuid must be 16 bytes, got {byte_size(value)}")
    return value


def unpack_fixed_array(buf: Buffer, pos: int, count: int, type_name: str) -> tuple[list[Any], int]:
    """``count`` fixed-width values in one ``struct`` call instead of a Python loop.

    The caller has already checked that ``count`` elements fit in the buffer.
    """
    code, size = FIXED_TYPES[type_name]
    fmt = f">{count}{code}" if len(code) == 1 else ">" + code * count
    return list(struct.unpack_from(fmt, buf, pos)), pos + count * size


def pack_fixed_array(values: Sequence[Any], type_name: str) -> bytes:
    """Pack fixed-width values (without the count prefix) in one ``struct`` call."""
    code, _ = FIXED_TYPES[type_name]
    if len(code) == 1:
        return struct.pack(f">{len(values)}{code}", *values)
    return b"".join(bytes(check_uuid(value)) for value in values)


# --- tagged fields -----------------------------------------------------------------------


def read_tag_count(buf: Buffer, pos: int) -> tuple[int, int]:
    """Number of tagged fields in a section; each takes at least 2 bytes (tag and size)."""
    count, pos = _read_unsigned(buf, pos, 5)
    if count * 2 > len(buf) - pos:
        raise _too_many(buf, pos, count)
    return count, pos


def skip_tagged_fields(buf: Buffer, pos: int) -> int:
    """Skip a whole tagged-field section (none of whose tags we know); return the new offset."""
    count, pos = read_tag_count(buf, pos)
    for _ in range(count):
        _tag, pos = _read_unsigned(buf, pos, 5)
        size, pos = _read_unsigned(buf, pos, 5)
        if pos + size > len(buf):
            raise _past_end(buf, pos, size)
        pos += size
    return pos
