"""Check a produced batch's records against its header, as Kafka's LogValidator does.

The header and CRC (``wire.record_batch.scan_batches``) prove the bytes arrived as the client
wrote them, not that they make sense: a client can write a correct CRC over garbage, claim
2^31-1 records for one, or flag plain bytes as gzip.  Stored, such a batch moves the log end
offset by its claimed count and stalls consumers at it.  So every record is walked before the
batch is accepted, and, like Kafka, nothing of a partition's batch is stored when one record is
wrong:

- framing (DefaultRecord.readFrom): each record's length varint matches its fields, every
  varint is well formed, key/value/header lengths stay inside the record, the header count is
  not negative, header keys are not null;
- count (DefaultRecordBatch's iterator): exactly ``recordsCount`` records fill the payload, no
  fewer ("premature EOF") and no bytes left over ("records still remaining");
- offsets: the records' offsets run ``base, base+1, ...`` ("does not have incremental
  offsets"), answered with ``record_errors``.  Kafka checks this only in its compressed path;
  an uncompressed record whose offset delta points past ``lastOffsetDelta`` is stored there and
  surfaces to consumers as an offset above the high watermark.  Odradek refuses it for every
  batch;
- null lengths: a key, value or header value is null only when its length is -1.  Kafka reads
  any negative length as null (it tests ``length >= 0``), but librdkafka's consumer stops at a
  record whose length is below -1 and never reaches the end of the partition, so Odradek
  refuses such a batch with INVALID_RECORD, stricter than Kafka;
- varint widths: every varint is the shortest encoding of its value.  Kafka's clients read up
  to five bytes for a 32-bit varint (the Java client fails on a sixth: "Varint is too long",
  which aiokafka reads), and Kafka accepts padding within that; no client writes any, so
  Odradek refuses it, stricter than Kafka (see below).

Framing errors are INVALID_RECORD, as Kafka's InvalidRecordException; a payload that does not
decompress is CORRUPT_MESSAGE (``wire.bounded_decompress``).

Header keys must be valid UTF-8 here, where Java Kafka decodes them leniently (replacing bad
bytes): a key that is not text is refused with INVALID_RECORD rather than stored for consumers
that decode strictly (aiokafka, kafka-python) to choke on.

Why aiokafka's reader: the walk must not cost a Python loop per record on the produce path (a
pure-Python walker takes ~1.8 ms per MB of 1 KiB records, more than the broker's whole produce
path).  aiokafka's ``DefaultRecordBatch`` is a Cython implementation of exactly Kafka's record
format, shipped compiled in its wheels, with bounds checks on every length (fuzzed with 600,000
mutated batches: only ``CorruptRecordException`` or ``UnicodeDecodeError``).  Its records are
taken :data:`CHUNK` at a time, so memory stays bounded whatever count a batch claims, and each
chunk is checked by C-level calls over whole lists (``map``, ``accumulate``, ``in``, slices),
never by Python code per record.  Without its C extension it falls back to its pure-Python
reader, slower but with the same answers.

How a null's -1 is told from -24, and a varint from a padded one, without a Python loop per
record.  The reader gives -1 and -24 the same ``None`` and reads a varint of any width, so the
check must look at the bytes, and what the reader returns carries no positions.  Positions come
from sizes: no encoding of a record is shorter than the canonical one (shortest varints, a null
written as the one byte -1), so when the canonical sizes of all records add up to exactly the
payload, every varint is canonical (five bytes at most) and every record starts where the
running sum says; each null's length is then one byte at a known place, which must be 0x01.
One C call gathers those bytes (``itemgetter`` of many indices).  The canonical sizes come, for
a chunk of records:

- without a null (keyed records, the common case), with timestamps within 64 ms of the batch's
  base by its header (every timestamp delta then takes one byte; a batch whose sizes then do not
  add up is sized again from each record's timestamp, in case its header lied): as a sum, from
  ``size_of`` (key, value and headers) of each record, when the records' own lengths take
  varints of one size;
- of a keyless producer (null keys, values, no headers, timestamps as above), from the values'
  lengths alone: two lookup tables give each record's size and where its key length is; with
  values of one length the key lengths are evenly spaced, one strided slice of the payload;
- of any other shape, from aiokafka's Cython builder: ``size_in_bytes`` (a record's size) and
  ``size_of`` (from its key length to its end) place every null key, value and header value.

A batch whose sizes do not add up is refused: it holds a null written in more than one byte
(-2^31 takes five), an overlong varint (Kafka's clients read up to five bytes, the Java client
fails beyond; Kafka accepts up to five, but no client writes one), or an attributes byte from
0x80 (unused by Kafka; aiokafka reads it as a varint and the rest of the record shifted, so it
may accept records Kafka's clients misframe).  Refusing these is stricter than Kafka, and keeps
every batch off a Python walk, which a hostile client could otherwise ask for with tiny records
(several µs of the event loop per record).  A LogAppendTime flag is cleared for the reader, so
each record's own timestamp sizes it.  Keys, values and headers come out of a chunk in one C
call: aiokafka's record type visits exactly those three for the garbage collector, so
``gc.get_referents`` lists them (checked at import; ``attrgetter`` per field otherwise).

Measured with ``python -m bench.record_validation`` (CPU ms per MB of records, batches of ~1
MB, this shared 2-core machine; before is the walk as it was, reader plus offsets; the whole
table is in bench/README.md): 1 KiB records keyed 0.48 -> 1.11 (2.3x), null keys 0.44 -> 0.84
(1.9x), keyed with 1% null values 0.48 -> 1.35 (2.8x), null keys with timestamps over 1 s 0.45
-> 1.63 (3.6x), null keys of 10-2000 bytes 0.43 -> 1.44 (3.4x); 100 B records keyed 3.5 -> 8.5
(2.4x), null keys 3.4 -> 7.0 (2.1x), over 1 s 3.4 -> 14.5 (4.2x).  Of the keyed cost, taking
records in chunks, checking each for None and summing ``size_of`` is most: bounded memory, the
null check and the varint check each need one of them.  Alternatives measured: re-encoding a
chunk with nulls through aiokafka's builder and comparing the bytes costs more (its ``build``
computes a CRC-32C in software, 0.7 ms per MB on its own); ``size_in_bytes`` for keyless records
instead of the tables 1.6-2x more, for keyed ones 10-15% more than the summed ``size_of``; three
``attrgetter`` projections instead of ``gc.get_referents`` ~15% more for keyed records;
records projected into tuples instead of held in chunks more still.
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, chain, compress, islice, pairwise, repeat
from operator import add, attrgetter, is_, itemgetter, sub
from typing import Any

from aiokafka.errors import CorruptRecordException
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from wire.record_batch import HEADER_SIZE, BatchInfo, Compression, Record, decompress, encode_batch
from wire.record_batch_errors import InvalidRecordError, RecordErrors

__all__ = ["CHUNK", "checked_payload", "validate_records"]

CHUNK = 64
"""Records held at once, so memory stays bounded for a batch of millions of tiny records. A
divisor of 64, so the offset deltas of a chunk all take varints of one size (1 byte below 64,
2 below 8192, ...), which the keyless fast path counts on."""

_ATTRIBUTES_AT = 21
_INT16 = struct.Struct(">h")
_COMPRESSION_MASK = 0x07
_LOG_APPEND_TIME = 0x08
_NULL = 1  # -1, zigzag-encoded: the one byte a null length may be
_UNBOUNDED = 1 << 62  # the sizing builder never refuses a record for want of room
_ONE_BYTE_DELTAS = 64  # zigzag varints of -64..63 take one byte
_TABLED = 1 << 14  # value lengths the keyless fast path looks up (longer ones are sized)
_BELOW_MINUS_ONE = (
    "a record's key, value or header value has a length below -1 (only -1 means null; "
    "Odradek refuses what Kafka reads as null)"
)
_NOT_CANONICAL = (
    "a record is not in Kafka's shortest encoding: a varint padded, or a null length below -1 "
    "(Odradek refuses what no client writes; Kafka's clients read no varint over five bytes)"
)
_SEPARATE_HEADER_OVERHEAD = 3  # size_of(None, None, [h]) - h's bytes: two null markers, a count of 1
_RUN = list(range(CHUNK))  # the offset deltas of a full chunk, relative to its first record
_offset_of = attrgetter("offset")
_timestamp_of = attrgetter("timestamp")
_key_of = attrgetter("key")
_value_of = attrgetter("value")
_headers_of = attrgetter("headers")
_second = itemgetter(1)
_size_of = DefaultRecordBatchBuilder.size_of
_FRAMING_ERRORS = (CorruptRecordException, UnicodeDecodeError, IndexError, struct.error)

# aiokafka's messages for the two count errors, and Kafka's wording for them.
_KAFKA_WORDING = {
    "unconsumed bytes after all records consumed": "Incorrect declared batch size, records still remaining",
    "Can't read": "Incorrect declared batch size, premature EOF reached",
}


def _framing_error(batch: BatchInfo, exc: Exception) -> InvalidRecordError:
    detail = str(exc.args[0]) if exc.args else type(exc).__name__  # without aiokafka's "[Error 2]" prefix
    if isinstance(exc, UnicodeDecodeError):
        detail = f"a record header key is not valid UTF-8 ({exc.reason})"
    else:
        detail = next((kafka for ours, kafka in _KAFKA_WORDING.items() if ours in detail), detail)
    return InvalidRecordError(f"{detail} (batch of {batch.record_count} records)")


def _uncompressed_view(data: memoryview, batch: BatchInfo, payload: bytes | memoryview) -> bytes | memoryview:
    """The batch as aiokafka's reader takes it: the client's own bytes when uncompressed, else
    the header (codec bits cleared) followed by the already decompressed records.  A
    LogAppendTime flag is cleared too: the reader then gives each record's own timestamp (not
    the batch's max), which its size depends on."""
    if batch.compression == Compression.NONE and not batch.is_log_append_time:
        return data[batch.position : batch.end_position]
    header = bytearray(data[batch.position : batch.position + HEADER_SIZE])
    _INT16.pack_into(header, _ATTRIBUTES_AT, batch.attributes & ~(_COMPRESSION_MASK | _LOG_APPEND_TIME))
    return bytes(header) + bytes(payload)


def _chunks(view: bytes | memoryview, batch: BatchInfo) -> Iterator[list[Any]]:
    """The batch's records, :data:`CHUNK` at a time; a framing error, as it is read, raises
    ``InvalidRecordError``.

    ``islice`` enters its iterable again for every chunk, which the reader refuses, and the
    reader starts over when asked again after its end; ``filter(None, ...)`` (records are
    always true) is the cheapest C-level wrapper that enters it once, and the loop stops at
    the first short chunk.
    """
    records = filter(None, DefaultRecordBatch(view))
    while True:
        try:
            chunk = list(islice(records, CHUNK))
        except _FRAMING_ERRORS as exc:
            raise _framing_error(batch, exc) from exc
        if chunk:
            yield chunk
        if len(chunk) < CHUNK:
            return


def _fields_by_attribute(chunk: list[Any]) -> tuple[list[Any], list[Any], list[Any]]:
    """Keys, values and header lists of ``chunk``: one ``attrgetter`` per record and field."""
    return list(map(_key_of, chunk)), list(map(_value_of, chunk)), list(map(_headers_of, chunk))


def _fields_by_traversal(chunk: list[Any]) -> tuple[list[Any], list[Any], list[Any]]:
    """The same in one C call: aiokafka's record type visits exactly its key, value and headers
    for the garbage collector, in that order, so ``gc.get_referents`` lists them for a whole
    chunk (checked at import by :func:`_traversal_lists_fields`)."""
    fields = gc.get_referents(*chunk)
    return fields[0::3], fields[1::3], fields[2::3]


def _traversal_lists_fields() -> bool:
    """Whether this aiokafka's records list their fields for ``gc.get_referents`` as
    :func:`_fields_by_traversal` expects (its pure-Python fallback, or a future version, may not)."""
    probe = Record(0, 0, None, b"v", (("h", None),)), Record(1, 0, b"k", None)
    records = list(DefaultRecordBatch(bytes(encode_batch(probe))))
    expected = list(chain.from_iterable(zip(*_fields_by_attribute(records), strict=True)))
    found = gc.get_referents(*records)
    return len(found) == len(expected) and all(map(is_, found, expected))


_fields = _fields_by_traversal if _traversal_lists_fields() else _fields_by_attribute


def _null_header_value(headers: list[list[Any]]) -> bool:
    return None in map(_second, chain.from_iterable(headers))


def _key_markers(ends: list[int], keys: list[Any], values: list[Any], headers: list[Any]) -> Iterator[int]:
    """Where the null keys' lengths are: a record's end less ``size_of`` (the key's length byte,
    the value and the headers)."""
    if None not in keys:
        return iter(())
    if keys.count(None) == len(keys):  # keyless producers: every record
        return map(sub, ends, map(_size_of, keys, values, headers))
    nulls = list(map(is_, keys, repeat(None)))
    tails = map(_size_of, repeat(None), compress(values, nulls), compress(headers, nulls))
    return map(sub, compress(ends, nulls), tails)


def _value_markers(ends: list[int], values: list[Any], headers: list[Any]) -> Iterator[int]:
    """Where the null values' lengths are: only the headers follow one (``size_of`` with a null
    key and value counts both length bytes)."""
    if None not in values:
        return iter(())
    nulls = list(map(is_, values, repeat(None)))
    tails = map(sub, map(_size_of, repeat(None), repeat(None), compress(headers, nulls)), repeat(1))
    return map(sub, compress(ends, nulls), tails)


def _header_value_markers(ends: list[int], headers: list[list[Any]]) -> Iterator[int]:
    """Where the null header values' lengths are, for the whole chunk at once: each header's
    end is its record's end less the bytes of the headers after it in that record, which is a
    difference of running sums over all the chunk's headers."""
    if not any(headers):
        return iter(())
    flat = list(chain.from_iterable(headers))
    nulls = list(map(is_, map(_second, flat), repeat(None)))
    if True not in nulls:
        return iter(())
    alone = map(_size_of, repeat(None), repeat(None), map(list, zip(flat)))
    through = list(accumulate(map(sub, alone, repeat(_SEPARATE_HEADER_OVERHEAD)), initial=0))
    counts = list(map(len, headers))
    shifts = map(sub, ends, map(through.__getitem__, accumulate(counts)))  # record end - its headers' sum
    header_ends = map(add, chain.from_iterable(map(repeat, shifts, counts)), islice(through, 1, None))
    return map(sub, compress(header_ends, nulls), repeat(1))


def _varint_size(value: int) -> int:
    """Bytes of the zigzag varint of a non-negative ``value``."""
    return (max(2 * value, 1).bit_length() + 6) // 7


def _keyless_layout(length: int, delta: int) -> tuple[int, int]:
    """For a record with a null key, a value of ``length`` bytes, no headers, a one-byte
    timestamp delta and an offset delta of ``delta`` bytes: its size less the value's, and
    where its key length is (from the record's start)."""
    body = 1 + 1 + delta + 1 + _varint_size(length) + length + 1  # attributes ... header count
    return _varint_size(body) + body - length, _varint_size(body) + 1 + 1 + delta


def _keyless_tables(delta: int) -> tuple[bytes, bytes]:
    """:func:`_keyless_layout` for every length below :data:`_TABLED`, as two byte tables; built
    from the few runs where no varint changes size, each evaluated once."""
    steps = {0, _TABLED}
    for boundary in (64, 8192):  # where a zigzag varint of a length grows a byte
        steps |= {boundary, *(boundary - 4 - delta - size for size in (1, 2, 3))}  # a length, a body
    edges = sorted(step for step in steps if 0 <= step <= _TABLED)
    runs = [(_keyless_layout(low, delta), high - low) for low, high in pairwise(edges)]
    extra = b"".join(bytes([size]) * count for (size, _), count in runs)
    key_at = b"".join(bytes([at]) * count for (_, at), count in runs)
    return extra, key_at


_KEYLESS_LAYOUTS = {delta: _keyless_tables(delta) for delta in (1, 2, 3)}  # offset deltas below 2^20


def _bytes_at(records: bytes | memoryview, positions: Iterable[int]) -> tuple[int, ...]:
    """The bytes at ``positions``, gathered by one C call (``itemgetter`` of many indices)."""
    wanted = tuple(positions)
    if len(wanted) < 2:  # an itemgetter of one index answers a bare int
        return tuple(map(records.__getitem__, wanted))
    return itemgetter(*wanted)(records)


class _Layout:
    """Whether a batch's records are written as every client reads them: a null as -1 only,
    no 32-bit varint longer than 5 bytes; fed chunk by chunk from the first record (see the
    module docstring)."""

    def __init__(self, batch: BatchInfo, records: bytes | memoryview, *, trust_header: bool) -> None:
        self._sizer = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, _UNBOUNDED)
        self._sizer.append(0, batch.base_timestamp, None, None, [])  # records' timestamps are sized from it
        # Within 64 ms of the base timestamp every delta takes one byte, the least any delta
        # takes, so sizing with the base itself is exact (a larger delta breaks the sum; a
        # header whose max timestamp lies is sized again, not trusting it).
        self.near = trust_header and 0 <= batch.max_timestamp - batch.base_timestamp < _ONE_BYTE_DELTAS
        self._base_timestamp = batch.base_timestamp
        self._records = records
        self._end = 0  # where the records so far end if each has its canonical size
        self._wrong_marker = False

    def add(
        self, first: int, chunk: list[Any], keys: list[Any], values: list[Any], headers: list[Any]
    ) -> None:
        """Place the null lengths of ``chunk`` (records ``first``... of the batch) and check them."""
        if self._keyed_total(first, keys, values, headers):
            return
        found = self._keyless_lengths(first, keys, values, headers)
        if found is None:
            markers = self._sized_markers(first, chunk, keys, values, headers)
            if self._end > len(self._records):
                return  # not the canonical layout (never: no record is shorter than canonical)
            found = _bytes_at(self._records, markers)
        self._wrong_marker = self._wrong_marker or found.count(_NULL) != len(found)

    def _keyed_total(self, first: int, keys: list[Any], values: list[Any], headers: list[Any]) -> bool:
        """Count a chunk without nulls (timestamps within 64 ms of the base) by its sum alone:
        ``size_of`` each record's key, value and headers, and when the records' lengths all
        take varints of one size, the rest of each record is a constant.  False for any other
        chunk (left to the other ways)."""
        if not self.near or None in keys or None in values or (any(headers) and _null_header_value(headers)):
            return False
        sizes = list(map(_size_of, keys, values, headers))
        fixed = 2 + _varint_size(first)  # attributes, timestamp and offset deltas
        record_varint = _varint_size(min(sizes) + fixed)
        if _varint_size(max(sizes) + fixed) != record_varint:
            return False
        self._end += sum(sizes) + (fixed + record_varint) * len(sizes)
        return True

    def _keyless_lengths(
        self, first: int, keys: list[Any], values: list[Any], headers: list[Any]
    ) -> Sequence[int] | None:
        """The key length bytes of a keyless producer's chunk (null keys, values shorter than
        :data:`_TABLED`, no headers, timestamps within 64 ms of the base), placed from the
        values' lengths alone: two lookups give each record's size and where its key length is
        (with values of one length the key lengths are evenly spaced: one strided slice).  None
        for any other chunk."""
        if not self.near or keys.count(None) != len(keys) or any(headers):
            return None
        try:
            lengths = list(map(len, values))
        except TypeError:  # a null value
            return None
        extra, key_at = _KEYLESS_LAYOUTS[_varint_size(first)]  # one offset delta size per chunk
        start = self._end
        try:
            if lengths.count(lengths[0]) == len(lengths):
                size = lengths[0] + extra[lengths[0]]
                self._end += size * len(lengths)
                found: Sequence[int] = bytes(self._records[start + key_at[lengths[0]] : self._end : size])
            else:
                starts = list(accumulate(map(add, lengths, map(extra.__getitem__, lengths)), initial=start))
                self._end = starts[-1]
                positions = map(add, starts, map(key_at.__getitem__, lengths))
                found = () if self._end > len(self._records) else _bytes_at(self._records, positions)
        except (IndexError, KeyError):  # a longer value, or a batch of over 2^20 records
            self._end = start
            return None
        return found

    def _sized_markers(
        self, first: int, chunk: list[Any], keys: list[Any], values: list[Any], headers: list[Any]
    ) -> Iterable[int]:
        """Every chunk's null lengths, from each record's canonical size (``size_in_bytes``)
        and what follows each null (``size_of``)."""
        try:
            bounds = self._bounds(first, chunk, keys, values, headers)
        except TypeError:  # an aiokafka that reads a timestamp of -1 as None: size every delta as one byte
            self.near = True
            bounds = self._bounds(first, chunk, keys, values, headers)
        self._end = bounds[-1]
        ends = bounds[1:]
        return chain(
            _key_markers(ends, keys, values, headers),
            _value_markers(ends, values, headers),
            _header_value_markers(ends, headers),
        )

    def _bounds(
        self, first: int, chunk: list[Any], keys: list[Any], values: list[Any], headers: list[Any]
    ) -> list[int]:
        """Where the chunk's records start, and where the last one ends, if canonical."""
        timestamps = repeat(self._base_timestamp) if self.near else map(_timestamp_of, chunk)
        sizes = map(
            self._sizer.size_in_bytes, range(first, first + len(chunk)), timestamps, keys, values, headers
        )
        return list(accumulate(sizes, initial=self._end))

    def problem(self) -> str | None:
        """What no client would read right in the batch, or None: every record must have its
        canonical size, and every null length must be -1."""
        if self._end != len(self._records):
            return _NOT_CANONICAL
        return _BELOW_MINUS_ONE if self._wrong_marker else None


def _wrong_offsets(batch: BatchInfo, first: int, chunk: list[Any]) -> list[int]:
    """Indices (in the batch) of the chunk's records whose offset is not ``base + index``;
    compared relative to the chunk's first record, small integers Python never allocates."""
    deltas = list(map(sub, map(_offset_of, chunk), repeat(batch.base_offset + first)))
    if deltas == _RUN[: len(deltas)]:
        return []
    return [first + i for i, delta in enumerate(deltas) if delta != i]


def _walk(
    view: bytes | memoryview, batch: BatchInfo, payload: bytes | memoryview, *, trust_header: bool = True
) -> tuple[list[int], _Layout]:
    """One pass over the records: the indices with wrong offsets, and their layout."""
    wrong: list[int] = []
    layout = _Layout(batch, payload, trust_header=trust_header)
    first = 0
    for chunk in _chunks(view, batch):
        wrong += _wrong_offsets(batch, first, chunk)
        layout.add(first, chunk, *_fields(chunk))
        first += len(chunk)
    return wrong, layout


def _offsets_error(batch: BatchInfo, wrong: list[int]) -> RecordErrors:
    compressed = "" if batch.compression == Compression.NONE else "compressed "
    return RecordErrors(
        wrong,
        f"Inner record inside the {compressed}record batch does not have incremental offsets, "
        f"expected offset is {batch.base_offset + wrong[0]}",
    )


def validate_records(data: memoryview, batch: BatchInfo, payload: bytes | memoryview) -> None:
    """Raise ``InvalidRecordError`` unless ``payload`` (the decompressed records of ``batch``,
    which sits at ``batch.position`` in ``data``) holds exactly the records its header claims.

    ``batch`` must already have passed ``scan_batches`` (so ``recordsCount`` is positive and
    matches ``lastOffsetDelta``): then the count bounds the walk, and a claimed count far above
    what the bytes can hold fails at the first missing record, not after 2^31 iterations.
    """
    view = _uncompressed_view(data, batch, payload)
    wrong, layout = _walk(view, batch, payload)
    if wrong:
        raise _offsets_error(batch, wrong)
    if layout.problem() == _NOT_CANONICAL and layout.near:  # sized by a header that may lie
        _, layout = _walk(view, batch, payload, trust_header=False)
    problem = layout.problem()
    if problem:
        raise InvalidRecordError(f"{problem} (batch of {batch.record_count} records)")


def checked_payload(data: memoryview, batch: BatchInfo, limit: int) -> bytes | memoryview:
    """The records section of ``batch`` (at ``batch.position`` in ``data``, already through
    ``scan_batches``), decompressed to at most ``limit`` bytes and validated; the client's own
    bytes, not a copy, when the batch is uncompressed."""
    body = data[batch.position + HEADER_SIZE : batch.end_position]
    payload = body if batch.compression == Compression.NONE else decompress(batch.compression, body, limit)
    validate_records(data, batch, payload)
    return payload
