"""Decompress a record batch's payload without ever holding more than a fixed number of bytes.

Why: a few kilobytes of zstd can expand to gigabytes (256 MiB of zeros is an 8 KB zstd frame),
and the broker decompresses what clients send (validation, topic ``compression.type``,
compaction).  A one-shot ``decompress`` allocates whatever the data asks for, so every codec
here stops as soon as the output would pass ``limit`` and raises ``CorruptRecordError``
instead; memory stays near ``limit`` whatever the input claims.

How each codec is bounded (all C-backed, never a Python loop over the output):

- gzip: stdlib ``zlib.decompressobj`` with ``max_length``, member after member (Java's
  ``GZIPInputStream`` reads concatenated members too).
- zstd: ``zstandard``; a frame that declares its content size is refused before anything is
  allocated when that size is over the limit, otherwise ``max_output_size`` caps the output.
  One frame per batch (what Kafka's clients write); extra bytes after it are refused.
- lz4: ``lz4.frame.LZ4FrameDecompressor`` with ``max_length``, frame after frame.
- snappy: raw blocks (librdkafka) and xerial-framed blocks (Java) carry their uncompressed
  length in front; it is checked against what is left of the limit before decompressing.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Protocol

import cramjam
import lz4.frame
import zstandard

from wire.record_batch_errors import CorruptRecordError, DecompressionLimitError

__all__ = [
    "DEFAULT_DECOMPRESSED_LIMIT",
    "XERIAL_HEADER",
    "bounded_decompress",
    "decompressed_limit",
]

# Kafka's default message.max.bytes; ``decompressed_limit`` scales from it.
_DEFAULT_MESSAGE_MAX_BYTES = 1_048_588
# How much larger than the largest accepted batch its records may be once decompressed.  Real
# data rarely compresses better than 10x; 64x leaves room for very repetitive payloads while a
# bomb is refused after at most 64 MiB of output by default.
DECOMPRESSION_RATIO_LIMIT = 64
# Floor so that a topic with a tiny max.message.bytes can still hold ordinary compressed batches.
_MIN_LIMIT = 1 << 20

_GZIP_WBITS = 16 + zlib.MAX_WBITS
_INT32 = struct.Struct(">i")
# xerial snappy-java stream framing, which the Java producer writes (SnappyOutputStream):
# magic, int32 version 1, int32 minimum compatible version 1, then (int32 length, raw block)*.
XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)


def decompressed_limit(max_message_bytes: int) -> int:
    """Most bytes a batch's records may take decompressed on a topic with this
    ``max.message.bytes``: ``DECOMPRESSION_RATIO_LIMIT`` times it, at least 1 MiB."""
    return max(DECOMPRESSION_RATIO_LIMIT * max_message_bytes, _MIN_LIMIT)


DEFAULT_DECOMPRESSED_LIMIT = decompressed_limit(_DEFAULT_MESSAGE_MAX_BYTES)


def _too_large(codec: str, limit: int) -> DecompressionLimitError:
    return DecompressionLimitError(
        f"{codec} record batch payload decompresses to more than {limit} bytes, "
        f"the most this broker accepts ({DECOMPRESSION_RATIO_LIMIT} x max.message.bytes)"
    )


class _StreamDecompressor(Protocol):
    """What ``zlib.decompressobj`` and ``lz4.frame.LZ4FrameDecompressor`` have in common."""

    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: bytes | memoryview, max_length: int = ...) -> bytes: ...


def _drain_members(
    name: str, new: Callable[[], _StreamDecompressor], data: bytes | memoryview, limit: int
) -> bytes:
    """Decompress concatenated frames/members of one streaming codec, at most ``limit`` bytes."""
    parts: list[bytes] = []
    total = 0
    while True:
        decompressor = new()
        part = decompressor.decompress(data, limit - total + 1)
        total += len(part)
        if total > limit:
            raise _too_large(name, limit)
        if not decompressor.eof:
            raise CorruptRecordError(f"{name} record batch payload is truncated")
        parts.append(part)
        data = decompressor.unused_data
        if not data:
            return parts[0] if len(parts) == 1 else b"".join(parts)


def _zstd(data: bytes | memoryview, limit: int) -> bytes:
    declared = zstandard.frame_content_size(data)
    if declared > limit:
        raise _too_large("zstd", limit)
    decompressor = zstandard.ZstdDecompressor()
    try:
        return decompressor.decompress(data, max_output_size=limit, allow_extra_data=False)
    except zstandard.ZstdError:
        # A frame without a declared size fails alike when cut short and when it outgrows the
        # bound; reading one byte past the bound (never more) tells which, for the message.
        if len(decompressor.stream_reader(data).read(limit + 1)) > limit:
            raise _too_large("zstd", limit) from None
        raise


def _snappy_block(block: memoryview, left: int, limit: int) -> bytes:
    """One raw snappy block, refused from its length prefix if it would pass ``left`` bytes."""
    if cramjam.snappy.decompress_raw_len(block) > left:
        raise _too_large("snappy", limit)
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy(data: bytes | memoryview, limit: int) -> bytes:
    """Raw snappy (librdkafka) or xerial-framed snappy (Java's SnappyOutputStream)."""
    view = memoryview(data)
    if view[: len(XERIAL_MAGIC)] != XERIAL_MAGIC:
        return _snappy_block(view, limit, limit)
    parts: list[bytes] = []
    total = 0
    position = len(XERIAL_HEADER)
    while position < len(view):
        if position + 4 > len(view):
            raise CorruptRecordError("truncated xerial snappy block length")
        (length,) = _INT32.unpack_from(view, position)
        position += 4
        if length < 0 or position + length > len(view):
            raise CorruptRecordError("truncated xerial snappy block")
        part = _snappy_block(view[position : position + length], limit - total, limit)
        total += len(part)
        parts.append(part)
        position += length
    return b"".join(parts)


def _gzip(data: bytes | memoryview, limit: int) -> bytes:
    return _drain_members("gzip", lambda: zlib.decompressobj(_GZIP_WBITS), data, limit)


def _lz4(data: bytes | memoryview, limit: int) -> bytes:
    return _drain_members("lz4", lz4.frame.LZ4FrameDecompressor, data, limit)


_CODECS: dict[int, Callable[[bytes | memoryview, int], bytes]] = {1: _gzip, 2: _snappy, 3: _lz4, 4: _zstd}
_CODEC_ERRORS = (zlib.error, zstandard.ZstdError, RuntimeError, cramjam.DecompressionError)


def bounded_decompress(codec: int, data: bytes | memoryview, limit: int) -> bytes:
    """The records section of a compressed batch (codec ids 1-4, which ``wire.record_batch.
    decompress`` checks), at most ``limit`` bytes, read in place (no copy of ``data``).

    Damaged input and output past ``limit`` both raise ``CorruptRecordError`` (Kafka answers
    CORRUPT_MESSAGE for a payload it cannot decompress).
    """
    try:
        return _CODECS[codec](data, limit)
    except CorruptRecordError:
        raise
    except _CODEC_ERRORS as exc:
        raise CorruptRecordError(f"cannot decompress record batch (codec {codec}): {exc}") from exc
