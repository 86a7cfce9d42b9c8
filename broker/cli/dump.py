"""``odradek dump-log DIR|FILE...``: a partition's files offline, as ``kafka-dump-log``.

Reads segment, index, time-index and transaction-index files through :mod:`log.dump`
(read-only: it never modifies them) and prints per batch its offsets, record count, producer
id/epoch, base sequence, whether it is transactional or a control batch, whether its CRC is
valid, its position and size; ``--print-data-log`` adds the records.  Index entries are listed
with every inconsistency with their segment.  A progress bar counts the log bytes read.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from broker.cli.progress import Progress
from broker.cli.registry import OUTPUT, AdminError
from broker.cli.table import Output, render_table
from log.dump import DumpedBatch, DumpedFile, dump_files, segment_files
from wire.record_batch import Record

BATCH_HEADERS = [
    "BASE",
    "LAST",
    "COUNT",
    "PRODUCER",
    "EPOCH",
    "SEQ",
    "TXN",
    "CTRL",
    "CRC",
    "POSITION",
    "SIZE",
]
ENTRY_HEADERS = {
    "index": ["OFFSET", "POSITION"],
    "timeindex": ["TIMESTAMP", "OFFSET"],
    "txnindex": ["PRODUCER", "FIRST", "LAST", "STABLE"],
}


def shown(data: bytes | None) -> str:
    return "null" if data is None else data.decode("utf-8", "backslashreplace")


def record_line(record: Record, timestamp_type: str) -> str:
    headers = ",".join(f"{name}:{shown(value)}" for name, value in record.headers)
    return (
        f"  | offset: {record.offset} {timestamp_type}: {record.timestamp} key: {shown(record.key)} "
        f"value: {shown(record.value)} headers: [{headers}]"
    )


def batch_row(batch: DumpedBatch) -> list[object]:
    info = batch.info
    return [
        info.base_offset,
        info.last_offset,
        info.record_count,
        info.producer_id,
        info.producer_epoch,
        info.base_sequence,
        info.is_transactional,
        info.is_control,
        "ok" if batch.crc_valid else "BAD",
        info.position,
        info.size,
    ]


def data_lines(batch: DumpedBatch) -> list[str]:
    if batch.record_error is not None:
        return [f"  | records unreadable: {batch.record_error}"]
    if batch.marker is not None:
        return [f"  | offset: {batch.info.base_offset} endTxnMarker: {batch.marker}"]
    kind = "LogAppendTime" if batch.info.is_log_append_time else "CreateTime"
    return [record_line(r, kind) for r in batch.records or []]


def file_text(dumped: DumpedFile) -> str:
    lines = [f"Dumping {dumped.path}"]
    if dumped.kind == "log":
        lines.append(f"Log starting offset: {dumped.base_offset}")
        table = render_table(BATCH_HEADERS, [batch_row(b) for b in dumped.batches]).splitlines()
        lines += table[:2]
        for row, batch in zip(table[2:], dumped.batches, strict=True):
            lines.append(row)
            lines += data_lines(batch)
    else:
        lines.append(render_table(ENTRY_HEADERS[dumped.kind], dumped.entries))
    lines += [f"PROBLEM: {p}" for p in dumped.problems]
    return "\n".join(lines)


def batch_data(batch: DumpedBatch) -> dict[str, Any]:
    info = batch.info
    data: dict[str, Any] = {
        "baseOffset": info.base_offset,
        "lastOffset": info.last_offset,
        "count": info.record_count,
        "producerId": info.producer_id,
        "producerEpoch": info.producer_epoch,
        "baseSequence": info.base_sequence,
        "isTransactional": info.is_transactional,
        "isControl": info.is_control,
        "crcValid": batch.crc_valid,
        "position": info.position,
        "size": info.size,
        "partitionLeaderEpoch": info.partition_leader_epoch,
        "compression": info.compression,
        "maxTimestamp": info.max_timestamp,
    }
    if batch.records is not None:
        data["records"] = [
            {
                "offset": r.offset,
                "timestamp": r.timestamp,
                "key": None if r.key is None else shown(r.key),
                "value": None if r.value is None else shown(r.value),
                "headers": [[name, None if value is None else shown(value)] for name, value in r.headers],
            }
            for r in batch.records
        ]
    if batch.marker is not None:
        data["endTxnMarker"] = batch.marker
    if batch.record_error is not None:
        data["recordError"] = batch.record_error
    return data


def file_data(dumped: DumpedFile) -> dict[str, Any]:
    data: dict[str, Any] = {"file": dumped.path, "kind": dumped.kind, "baseOffset": dumped.base_offset}
    if dumped.kind == "log":
        data["batches"] = [batch_data(b) for b in dumped.batches]
    else:
        keys = [h.lower() for h in ENTRY_HEADERS[dumped.kind]]
        data["entries"] = [dict(zip(keys, entry, strict=True)) for entry in dumped.entries]
    data["problems"] = dumped.problems
    return data


def dump_log_command(args: argparse.Namespace) -> str:
    try:
        paths = segment_files(args.paths)
        missing = [p for p in paths if not os.path.isfile(p)]
        if missing or not paths:
            raise AdminError(f"no segment files to dump at {', '.join(missing or args.paths)}")
        total = sum(os.path.getsize(p) for p in paths if p.endswith(".log"))
        with Progress(total, "reading logs") as bar:
            dumped = dump_files(paths, args.print_data_log, bar.advance)
    except (ValueError, OSError) as exc:  # not a segment file; unreadable
        raise AdminError(str(exc)) from exc
    output = Output("\n\n".join(file_text(d) for d in dumped), [file_data(d) for d in dumped])
    return output.render(args.output)


def add_dump_command(commands: argparse._SubParsersAction) -> None:
    """Register ``dump-log``."""
    dump = commands.add_parser(
        "dump-log",
        help="print a partition's segment and index files, checking them (offline)",
        parents=[OUTPUT],
    )
    dump.add_argument("paths", nargs="+", metavar="DIR|FILE", help="a partition directory or segment files")
    dump.add_argument("--print-data-log", action="store_true", help="print each batch's records too")
    dump.set_defaults(run=dump_log_command)
