"""``odradek console-produce`` and ``console-consume``: records between a terminal and a topic.

Like Kafka's console producer and consumer, but symmetric: the line formats of
:mod:`broker.cli.main.records` are read by one and written by the other.  The producer asks for its
topic as Kafka's producer does, allowing auto-creation, so a broker with
``auto.create.topics.enable`` creates a missing topic with its defaults; on one without, the
topic is reported missing after ``--max-block-ms`` (the producer's ``max.block.ms``, 60 s in
Kafka, 10 s here). It sends batches of up to ``BATCH_RECORDS`` records per partition with
``acks=all`` (each line at once when stdin is a terminal); the consumer fetches every chosen partition (sessionless Fetch),
skips control batches, checks every batch's CRC, and with ``--group`` starts from the group's
committed offsets and commits its positions when it stops (a standalone commit, which Kafka
accepts only while the group has no members).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from broker.cli.admin import topic_partitions
from broker.cli.records import FORMATS, InputRecord, Layout, format_record, parse_line, partition_for_key
from broker.cli.registry import CONNECTION, AdminError, check, connect
from broker.client.admin_client import EARLIEST, LATEST, READ_COMMITTED, READ_UNCOMMITTED, KafkaConnection
from wire.control_batch import read_end_txn_marker
from wire.error_codes import ErrorCode
from wire.record_batch import BatchInfo, Record, decode_records, encode_batch, read_batch_header, verify_crc
from wire.record_batch_errors import CorruptRecordError

BATCH_RECORDS = 1000
BATCH_BYTES = 512 * 1024
FETCH_WAIT_MS = 500
MAX_BLOCK_MS = 10_000
METADATA_BACKOFF_S = (0.1, 1.0)  # Kafka's retry.backoff.ms and retry.backoff.max.ms
WAITING_FOR_TOPIC = (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE)


def layout_of(args: argparse.Namespace) -> Layout:
    return Layout(args.format, args.timestamp, args.headers, args.key)


def parsed_lines(stream: BinaryIO, layout: Layout) -> Iterator[InputRecord]:
    """Records of the input lines.  An empty text line is an empty value (the consumer prints
    one so), an empty JSON line is nothing."""
    for number, line in enumerate(stream, 1):
        line = line.removesuffix(b"\n").removesuffix(b"\r")
        if not line and layout.format == "json":
            continue
        try:
            yield parse_line(line, layout)
        except AdminError as exc:
            raise AdminError(f"line {number}: {exc}") from exc


class BatchingProducer:
    """Collects records per partition and sends them as one batch each when a limit is hit."""

    def __init__(self, conn: KafkaConnection, topic: str, partitions: list[int], fixed: int | None) -> None:
        self.conn, self.topic, self.partitions, self.fixed = conn, topic, partitions, fixed
        self.pending: dict[int, list[Record]] = {}
        self.pending_bytes = 0
        self.sent = 0
        self._round_robin = itertools.cycle(partitions)

    def choose(self, record: InputRecord) -> int:
        partition = self.fixed if record.partition is None else record.partition
        if partition is None:
            if record.key is None:
                return next(self._round_robin)
            return partition_for_key(record.key, len(self.partitions))
        if partition not in self.partitions:
            raise AdminError(f"topic {self.topic} has no partition {partition}")
        return partition

    def add(self, record: InputRecord) -> None:
        partition = self.choose(record)
        queue = self.pending.setdefault(partition, [])
        timestamp = int(time.time() * 1000) if record.timestamp is None else record.timestamp
        queue.append(Record(len(queue), timestamp, record.key, record.value, record.headers))
        self.pending_bytes += len(record.key or b"") + len(record.value or b"")
        if len(queue) >= BATCH_RECORDS or self.pending_bytes >= BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        for partition, records in sorted(self.pending.items()):
            answer = self.conn.produce(self.topic, partition, bytes(encode_batch(records)))
            check(answer, f"producing to {self.topic}-{partition}")
            self.sent += len(records)
        self.pending.clear()
        self.pending_bytes = 0


def writable_partitions(conn: KafkaConnection, topic: str, max_block_ms: int) -> list[int]:
    """The topic's partitions once each has a leader, asked for as Kafka's producer asks:
    allowing auto-creation, and again (Kafka answers LEADER_NOT_AVAILABLE while it creates the
    topic, UNKNOWN_TOPIC_OR_PARTITION when it will not) until ``max_block_ms`` has passed."""
    deadline = time.monotonic() + max_block_ms / 1000
    pause, longest = METADATA_BACKOFF_S
    while True:
        (entry,) = conn.metadata([topic], allow_auto_topic_creation=True)["topics"]
        partitions = entry["partitions"]
        if entry["error_code"] not in WAITING_FOR_TOPIC:
            check(entry, f"looking up {topic}")
        if (
            entry["error_code"] == ErrorCode.NONE
            and partitions
            and all(p["leader_id"] >= 0 for p in partitions)
        ):
            return sorted(p["partition_index"] for p in partitions)
        if time.monotonic() >= deadline:
            raise AdminError(missing_topic(topic, entry["error_code"], max_block_ms))
        time.sleep(min(pause, max(deadline - time.monotonic(), 0)))
        pause = min(pause * 2, longest)


def missing_topic(topic: str, error_code: int, max_block_ms: int) -> str:
    """What to tell a user whose topic did not become writable in time (Kafka's producer says
    "Topic T not present in metadata after N ms.")."""
    if error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return (
            f"topic {topic!r} not present in metadata after {max_block_ms} ms: it does not exist and the "
            f"broker does not create topics on use (auto.create.topics.enable=false). Create it with "
            f"`odradek topics create {topic}`"
        )
    return (
        f"topic {topic!r} has no leader for every partition after {max_block_ms} ms; "
        "try again, or wait longer with --max-block-ms"
    )


def console_produce(args: argparse.Namespace) -> None:
    """Lines of stdin to the topic. As in Kafka's tool, the topic is looked up (and so created
    where the broker auto-creates) when the first record is there to send, not before."""
    records = parsed_lines(sys.stdin.buffer, layout_of(args))
    first = next(records, None)
    sent = 0
    if first is not None:
        with connect(args) as conn:
            partitions = writable_partitions(conn, args.topic, args.max_block_ms)
            producer = BatchingProducer(conn, args.topic, partitions, args.partition)
            interactive = sys.stdin.isatty()
            for record in itertools.chain([first], records):
                producer.add(record)
                if interactive:
                    producer.flush()
            producer.flush()
            sent = producer.sent
    print(f"produced {sent} record(s) to {args.topic}", file=sys.stderr)


def batches_of(records: bytes | memoryview) -> Iterator[BatchInfo]:
    """Whole batches of a fetched record set, CRCs checked; a cut-off last batch ends it."""
    position = 0
    while position < len(records):
        try:
            batch = read_batch_header(records, position)
        except CorruptRecordError:
            return  # the fetch's size limit cut the last batch; the next fetch starts with it
        verify_crc(records, batch)
        yield batch
        position = batch.end_position


class AbortedTransactions:
    """The Java consumer's read_committed filter over one partition's fetched batches.

    A producer's transactional batches are dropped from the first offset of its aborted
    transaction (listed in the Fetch answer) until its abort marker; control batches are never
    records.  Under read_uncommitted the list is empty, so only control batches are dropped.
    """

    def __init__(self, aborted: list[dict] | None) -> None:
        self.pending = sorted((a["first_offset"], a["producer_id"]) for a in aborted or [])
        self.active: set[int] = set()

    def drops(self, records: bytes | memoryview, batch: BatchInfo) -> bool:
        while self.pending and self.pending[0][0] <= batch.last_offset:
            self.active.add(self.pending.pop(0)[1])
        if batch.is_control:
            marker = read_end_txn_marker(records, batch)
            if marker is not None and not marker.is_commit:
                self.active.discard(batch.producer_id)
            return True
        return batch.is_transactional and batch.producer_id in self.active


class Consumer:
    """Positions per partition, moved forward as records are handed out."""

    def __init__(self, conn: KafkaConnection, args: argparse.Namespace) -> None:
        self.conn, self.args = conn, args
        self.delivered = 0
        self.isolation = READ_COMMITTED if args.isolation_level == "read_committed" else READ_UNCOMMITTED
        partitions = topic_partitions(conn, args.topic)
        if args.partition is not None:
            if args.partition not in partitions:
                raise AdminError(f"topic {args.topic} has no partition {args.partition}")
            partitions = [args.partition]
        self.positions = self.reset(partitions)
        if args.group:
            committed = conn.committed_offsets(args.group)
            for partition in partitions:
                if committed.get((args.topic, partition), -1) >= 0:
                    self.positions[partition] = committed[(args.topic, partition)]

    def reset(self, partitions: Iterable[int]) -> dict[int, int]:
        """Where a partition without a usable position starts: Kafka's auto.offset.reset."""
        start = EARLIEST if self.args.from_beginning else LATEST
        return self.conn.list_offsets(self.args.topic, list(partitions), start, self.isolation)

    def poll(self) -> Iterator[tuple[int, BatchInfo, Record]]:
        out_of_range = []
        for answer in self.conn.fetch(self.args.topic, dict(self.positions), FETCH_WAIT_MS, self.isolation):
            partition = answer["partition_index"]
            if answer["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE:
                out_of_range.append(partition)
                continue
            check(answer, f"fetching {self.args.topic}-{partition}")
            data = answer["records"] or b""
            aborted = AbortedTransactions(answer.get("aborted_transactions"))
            for batch in batches_of(data):
                records = [] if aborted.drops(data, batch) else decode_records(data, batch)
                for record in records:
                    if record.offset >= self.positions[partition]:
                        self.positions[partition] = record.offset + 1  # before: the caller may stop here
                        yield partition, batch, record
                self.positions[partition] = max(self.positions[partition], batch.next_offset)
        if out_of_range:
            self.positions.update(self.reset(out_of_range))

    def commit(self, conn: KafkaConnection) -> None:
        """Commit every position as the group's offset (a standalone commit)."""
        errors = conn.commit_offsets(
            self.args.group, {(self.args.topic, p): o for p, o in self.positions.items()}
        )
        failed = {p: ErrorCode(code).name for (_, p), code in errors.items() if code}
        if failed:
            raise AdminError(f"committing the positions of group {self.args.group} failed: {failed}")


def consume_into(consumer: Consumer, out: BinaryIO, layout: Layout) -> None:
    """Print records until ``--max-messages`` or ``--timeout-ms`` of silence (or forever)."""
    args = consumer.args
    idle_since = time.monotonic()
    while args.max_messages is None or consumer.delivered < args.max_messages:
        received = False
        for partition, batch, record in consumer.poll():
            timestamp_type = "LogAppendTime" if batch.is_log_append_time else "CreateTime"
            line = format_record(args.topic, partition, record.offset, timestamp_type, record, layout) + b"\n"
            # Counted before it is written: a Ctrl-C right after an unbuffered write would
            # otherwise report one record fewer than the reader saw.
            consumer.delivered += 1
            out.write(line)
            received = True
            if consumer.delivered == args.max_messages:
                break
        out.flush()
        if received:
            idle_since = time.monotonic()
        elif args.timeout_ms is not None and (time.monotonic() - idle_since) * 1000 >= args.timeout_ms:
            break


def console_consume(args: argparse.Namespace) -> None:
    with connect(args) as conn:
        consumer = Consumer(conn, args)
        try:
            consume_into(consumer, sys.stdout.buffer, layout_of(args))
            if args.group:
                consumer.commit(conn)
        except KeyboardInterrupt:
            # Ctrl-C is how a consumer without limits stops.  It may have cut a request short,
            # leaving that connection mid-answer, so the commit goes over a new one.
            if args.group:
                with connect(args) as fresh:
                    consumer.commit(fresh)
    print(f"Processed a total of {consumer.delivered} messages", file=sys.stderr)


def add_console_commands(commands: argparse._SubParsersAction) -> None:
    """Register ``console-produce`` and ``console-consume``."""

    def console(name: str, help_text: str) -> argparse.ArgumentParser:
        parser = commands.add_parser(name, help=help_text, parents=[CONNECTION])
        parser.add_argument("topic")
        parser.add_argument("--format", choices=FORMATS, default="text", help="line format (default text)")
        parser.add_argument("--key", action="store_true", help="lines carry a key field")
        parser.add_argument("--headers", action="store_true", help="lines carry a headers field")
        parser.add_argument("--timestamp", action="store_true", help="lines carry a timestamp (ms) field")
        parser.add_argument("--partition", type=int, help="only this partition")
        return parser

    produce = console("console-produce", "produce records read from stdin, one per line")
    produce.set_defaults(run=console_produce)
    produce.add_argument(
        "--max-block-ms",
        type=int,
        default=MAX_BLOCK_MS,
        help=f"how long to wait for a missing topic to be created (default {MAX_BLOCK_MS})",
    )
    consume = console("console-consume", "print a topic's records, one per line")
    consume.set_defaults(run=console_consume)
    consume.add_argument(
        "--from-beginning", action="store_true", help="start at the earliest offset, not the end"
    )
    consume.add_argument("--group", help="start from this group's committed offsets and commit when done")
    consume.add_argument("--max-messages", type=int, help="stop after this many records")
    consume.add_argument("--timeout-ms", type=int, help="stop when no record arrives for this long")
    consume.add_argument(
        "--isolation-level",
        choices=["read_uncommitted", "read_committed"],
        default="read_uncommitted",
        help="read_committed stops at open transactions and skips aborted ones (default: Kafka's)",
    )
