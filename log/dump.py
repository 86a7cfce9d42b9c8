"""Offline inspection of partition files, as Kafka's ``kafka-dump-log``: read, verify, never write.

Every file is opened read-only and read with ``pread``; nothing here touches the broker's open
file cache, checkpoints or recovery, so it is safe on the data directory of a running broker
(it shows what is on disk at that moment) and on a copy taken from a broken one.

- ``.log``: every batch's header, its CRC checked, and optionally its records (decompressed
  within the usual bound).  A batch that runs past the end of the file, or a header that cannot
  be a batch, ends the walk with a problem saying where.
- ``.index``: entries (offset, position); each must point at a batch boundary of its segment,
  at a batch whose offsets reach the entry's offset, and grow strictly.
- ``.timeindex``: entries (timestamp, offset); each offset must be the last offset of a batch
  whose max timestamp is the entry's, and timestamps must grow strictly.
- ``.txnindex``: aborted transactions (producer id, first and last offset, stable offset).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from log.index import OFFSET_ENTRY, TIME_ENTRY
from log.txn_index import ENTRY as TXN_ENTRY
from wire.control_batch import read_end_txn_marker
from wire.errors import WireError
from wire.record_batch import HEADER_SIZE, BatchInfo, Record, decode_records, parse_batch_header, verify_crc

SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


def _ignore(_steps: int) -> None:
    """The default progress callback."""


@dataclass
class DumpedBatch:
    """One batch as the file holds it; ``records`` only when asked for."""

    info: BatchInfo
    crc_valid: bool
    records: list[Record] | None = None
    marker: str | None = None
    record_error: str | None = None


@dataclass
class DumpedFile:
    """What one file holds and what is wrong with it."""

    path: str
    kind: str
    base_offset: int
    batches: list[DumpedBatch] = field(default_factory=list)
    entries: list[tuple[int, ...]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def base_offset_of(path: str) -> int:
    stem = os.path.basename(path).split(".", 1)[0]
    return int(stem) if stem.isdigit() else 0


def _read_all(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        chunks, position = [], 0
        while position < size:
            chunk = os.pread(fd, min(1 << 20, size - position), position)
            if not chunk:
                break
            chunks.append(chunk)
            position += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def walk_log(
    path: str, read_data: bool, on_bytes: Callable[[int], None] = _ignore
) -> Iterator[tuple[BatchInfo, bytes] | str]:
    """Each batch with its bytes (only its header unless ``read_data``), in file order; a
    problem (a string) ends the walk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        position = 0
        while position < size:
            header = os.pread(fd, HEADER_SIZE, position)
            if len(header) < HEADER_SIZE:
                yield f"byte {position}: {len(header)} bytes left, too few for a batch header ({HEADER_SIZE})"
                return
            try:
                batch = parse_batch_header(header, 0)
            except WireError as exc:
                yield f"byte {position}: not a record batch ({exc}); the rest of the file is not read"
                return
            if position + batch.size > size:
                yield f"byte {position}: the batch declares {batch.size} bytes, only {size - position} remain"
                return
            data = os.pread(fd, batch.size, position) if read_data else header
            yield batch._replace(position=position), data
            position += batch.size
            on_bytes(batch.size)
    finally:
        os.close(fd)


def dump_log(path: str, print_data: bool, on_bytes: Callable[[int], None] = _ignore) -> DumpedFile:
    dumped = DumpedFile(path, "log", base_offset_of(path))
    for item in walk_log(path, True, on_bytes):
        if isinstance(item, str):
            dumped.problems.append(item)
            break
        info, data = item
        local = info._replace(position=0)
        try:
            verify_crc(data, local)
            valid = True
        except WireError:
            valid = False
            dumped.problems.append(f"batch at offset {info.base_offset} (byte {info.position}): CRC mismatch")
        batch = DumpedBatch(info, valid)
        if print_data:
            try:
                if info.is_control:
                    marker = read_end_txn_marker(data, local)
                    batch.marker = "none" if marker is None else marker.control_type.name
                else:
                    batch.records = decode_records(data, local)
            except WireError as exc:
                batch.record_error = str(exc)
        dumped.batches.append(batch)
    return dumped


def _entries(data: bytes, entry_size: int, dumped: DumpedFile) -> bytes:
    whole = len(data) - len(data) % entry_size
    if whole != len(data):
        dumped.problems.append(f"{len(data) - whole} trailing bytes do not make a whole entry")
    return data[:whole]


Entry = tuple[int, int]


def _dump_index(
    path: str,
    kind: str,
    entry: struct.Struct,
    absolute: Callable[[Entry, int], Entry],
    problems: Callable[[Entry, Entry], Iterator[str]],
) -> DumpedFile:
    """The entries of an ``.index``/``.timeindex`` file with their offsets made absolute, and
    ``problems(entry, previous entry)`` of each ((-1, -1) before the first)."""
    dumped = DumpedFile(path, kind, base_offset_of(path))
    previous = (-1, -1)
    for fields in entry.iter_unpack(_entries(_read_all(path), entry.size, dumped)):
        shown = absolute(fields, dumped.base_offset)
        dumped.entries.append(shown)
        dumped.problems.extend(f"entry {shown}: {problem}" for problem in problems(shown, previous))
        previous = shown
    return dumped


def dump_offset_index(path: str, batches: list[BatchInfo]) -> DumpedFile:
    by_position = {b.position: b for b in batches}
    last_offset = batches[-1].last_offset if batches else -1

    def problems(entry: Entry, previous: Entry) -> Iterator[str]:
        offset, position = entry
        batch = by_position.get(position)
        if batch is None:
            yield f"position {position} is not the start of a batch"
        elif not batch.base_offset <= offset <= last_offset:
            yield f"the batch there starts at offset {batch.base_offset}, the segment ends at {last_offset}"
        if offset <= previous[0] or position <= previous[1]:
            yield f"does not follow {previous}"

    return _dump_index(path, "index", OFFSET_ENTRY, lambda e, base: (base + e[0], e[1]), problems)


def dump_time_index(path: str, batches: list[BatchInfo]) -> DumpedFile:
    by_last_offset = {b.last_offset: b for b in batches}

    def problems(entry: Entry, previous: Entry) -> Iterator[str]:
        timestamp, offset = entry
        batch = by_last_offset.get(offset)
        if batch is None:
            yield f"no batch of the segment ends at offset {offset}"
        elif batch.max_timestamp != timestamp:
            yield f"the batch ending there has max timestamp {batch.max_timestamp}"
        if timestamp <= previous[0]:
            yield f"timestamp is not above the previous {previous[0]}"

    return _dump_index(path, "timeindex", TIME_ENTRY, lambda e, base: (e[0], base + e[1]), problems)


def dump_txn_index(path: str) -> DumpedFile:
    dumped = DumpedFile(path, "txnindex", base_offset_of(path))
    for version, *fields in TXN_ENTRY.iter_unpack(_entries(_read_all(path), TXN_ENTRY.size, dumped)):
        dumped.entries.append(tuple(fields))
        if version != 0:
            dumped.problems.append(f"entry {tuple(fields)}: unknown version {version}")
    return dumped


def _order(path: str) -> tuple[int, int, str]:
    """Segments by base offset, each ``.log`` first so its indexes are checked against it."""
    suffix = os.path.splitext(path)[1]
    return base_offset_of(path), SUFFIXES.index(suffix) if suffix in SUFFIXES else len(SUFFIXES), path


def segment_files(paths: list[str]) -> list[str]:
    """The files to dump: files as given, directories expanded to their segment files in order."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            found.extend(
                sorted((os.path.join(path, n) for n in os.listdir(path) if n.endswith(SUFFIXES)), key=_order)
            )
        else:
            found.append(path)
    return found


def _segment_batches(log_path: str, dumped: dict[str, DumpedFile]) -> list[BatchInfo] | None:
    if log_path in dumped:
        return [b.info for b in dumped[log_path].batches]
    if not os.path.exists(log_path):
        return None
    return [item[0] for item in walk_log(log_path, False) if not isinstance(item, str)]


def dump_files(
    paths: list[str], print_data: bool, on_bytes: Callable[[int], None] = _ignore
) -> list[DumpedFile]:
    """Dump every file; an index is checked against its own segment's ``.log`` next to it."""
    logs: dict[str, DumpedFile] = {}
    dumped = []
    for path in paths:
        stem, suffix = os.path.splitext(path)
        if suffix == ".log":
            logs[path] = dump_log(path, print_data, on_bytes)
            dumped.append(logs[path])
        elif suffix in (".index", ".timeindex"):
            log_path = stem + ".log"
            batches = _segment_batches(log_path, logs)
            dump = dump_offset_index if suffix == ".index" else dump_time_index
            dumped.append(dump(path, batches or []))
            if batches is None:
                dumped[-1].problems.append(f"no segment file {os.path.basename(log_path)} to check against")
        elif suffix == ".txnindex":
            dumped.append(dump_txn_index(path))
        else:
            raise ValueError(f"{path}: not a segment file (expected one of {', '.join(SUFFIXES)})")
    return dumped
