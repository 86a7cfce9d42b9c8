"""The message browser: a bounded page of a topic's records, from an offset, a time, or the newest.

A page is bounded three ways, so a huge topic (or a huge record) cannot exhaust the console's
memory or the browser's: at most ``MAX_RECORDS`` records, at most ``PAGE_BYTES`` fetched from
the brokers (each Fetch asks for at most 1 MiB), and of each key, value and header at most
``SHOWN_BYTES`` shown.  "Newest" reads the last records of the ``MAX_PARTITIONS`` partitions
with the highest end offsets and shows the newest by timestamp; "offset" and "time" read
forward from an offset, or from the first offset at or after a time (ListOffsets), in
timestamp order.  Control batches and aborted transactions' records are skipped, as a
read_uncommitted consumer skips control batches.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from broker.cli.console import AbortedTransactions, batches_of
from broker.cli.group_offsets import parse_datetime_ms
from broker.cli.registry import AdminError
from broker.cli.web.errors import require
from broker.cli.web.links import Session
from broker.cli.web.offsets import INT64_MAX, Partition, leaders, log_offsets
from broker.cli.web.topics_data import topic_metadata
from broker.client.admin_client import EARLIEST, LATEST
from wire.error_codes import ErrorCode
from wire.primitives import INT32_MAX
from wire.record_batch import Record, decode_records

MAX_RECORDS = 200
DEFAULT_RECORDS = 50
PAGE_BYTES = 4 * 1024 * 1024
MAX_PARTITIONS = 32
SHOWN_BYTES = 4096
DECOMPRESSED_LIMIT = 8 * 1024 * 1024
VIEWS = ("auto", "text", "json", "hex")
MODES = ("newest", "offset", "time")
PRINTABLE_CONTROLS = {"\t", "\n", "\r"}


@dataclass(frozen=True)
class Query:
    mode: str = "newest"
    partition: int | None = None
    offset: int = 0
    time_ms: int | None = None
    limit: int = DEFAULT_RECORDS
    view: str = "auto"


@dataclass(frozen=True)
class Shown:
    """A key, value or header value as a person reads it in the chosen view."""

    size: int
    kind: str
    """What the bytes look like: json, text or binary."""
    text: str
    cut: bool


@dataclass(frozen=True)
class ShownRecord:
    partition: int
    offset: int
    timestamp: int
    key: Shown | None
    value: Shown | None
    headers: list[tuple[str, Shown | None]]

    @property
    def time_text(self) -> str:
        return datetime.fromtimestamp(self.timestamp / 1000, UTC).isoformat(timespec="milliseconds")


@dataclass
class Page:
    records: list[ShownRecord]
    fetched_bytes: int = 0
    partitions: int = 0
    notes: list[str] = field(default_factory=list)


def as_text(data: bytes) -> str | None:
    """The bytes as UTF-8 text (a character cut at the end is left out), or None if they are
    not text: invalid UTF-8, or control characters other than tabs and line ends."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError:
        return None
    if any(ch < " " and ch not in PRINTABLE_CONTROLS for ch in text):
        return None
    return text


def pretty_json(text: str) -> str | None:
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return None


def shown(data: bytes | None, view: str) -> Shown | None:
    """``data`` as the view asks: auto picks pretty JSON, else text, else hex."""
    if data is None:
        return None
    cut = len(data) > SHOWN_BYTES
    head = data[:SHOWN_BYTES]
    text = as_text(head)
    pretty = None if text is None or cut else pretty_json(text)
    kind = "json" if pretty is not None else "text" if text is not None else "binary"
    if view == "hex" or (text is None and view != "text"):
        return Shown(len(data), kind, head.hex(" "), cut)
    if view == "text" or pretty is None:
        return Shown(len(data), kind, text if text is not None else head.decode("utf-8", "replace"), cut)
    return Shown(len(data), kind, pretty, cut)


def shown_record(partition: int, record: Record, view: str) -> ShownRecord:
    return ShownRecord(
        partition,
        record.offset,
        record.timestamp,
        shown(record.key, view),
        shown(record.value, view),
        [(name, shown(value, view)) for name, value in record.headers],
    )


class Reader:
    """Reads partitions forward within the page's byte budget."""

    def __init__(self, s: Session, topic: str, led: dict[Partition, int], page: Page) -> None:
        self.s, self.topic, self.led, self.page = s, topic, led, page

    def read(self, partition: int, start: int, end: int, limit: int, view: str) -> list[ShownRecord]:
        """At most ``limit`` records of ``partition`` from ``start`` up to ``end``."""
        found: list[ShownRecord] = []
        position = start
        conn = self.s.node(self.led[(self.topic, partition)])
        while position < end and len(found) < limit and self.page.fetched_bytes < PAGE_BYTES:
            (answer,) = conn.fetch(self.topic, {partition: position}, max_wait_ms=0)
            if answer["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE:
                self.page.notes.append(f"partition {partition}: offset {position} is no longer in the log")
                break
            where = f"{self.topic}-{partition}"
            require(answer, f"reading {where}", f"READ on TOPIC {self.topic}", f"topic {self.topic}")
            data = answer["records"] or b""
            self.page.fetched_bytes += len(data)
            aborted = AbortedTransactions(answer.get("aborted_transactions"))
            moved = position
            for batch in batches_of(data):
                records = (
                    [] if aborted.drops(data, batch) else decode_records(data, batch, DECOMPRESSED_LIMIT)
                )
                found += [shown_record(partition, r, view) for r in records if position <= r.offset < end][
                    : limit - len(found)
                ]
                moved = max(moved, batch.next_offset)
                if len(found) >= limit:
                    break
            if moved == position:
                break  # nothing whole came back (a batch larger than the fetch's 1 MiB)
            position = moved
        return found


def starts(
    s: Session,
    query: Query,
    led: dict[Partition, int],
    earliest: dict[Partition, int],
    latest: dict[Partition, int],
) -> dict[Partition, int]:
    """Where each partition's reading starts for the query's mode."""
    if query.mode == "newest":
        fullest = sorted((p for p in latest if latest[p] > earliest.get(p, 0)), key=lambda p: -latest[p])
        return {p: max(earliest[p], latest[p] - query.limit) for p in fullest[:MAX_PARTITIONS]}
    if query.mode == "time":
        at = log_offsets(s, led, query.time_ms or 0)
        return {p: offset for p, offset in at.items() if offset >= 0}
    return {p: max(query.offset, earliest[p]) for p in latest if p in earliest}


def browse(s: Session, topic: str, query: Query) -> Page:
    """One page of records of ``topic`` for ``query``."""
    metadata = topic_metadata(s, topic)
    led = leaders(metadata)
    if query.partition is not None:
        if (topic, query.partition) not in led:
            raise AdminError(f"topic {topic} has no partition {query.partition} (it has {len(led)})")
        led = {(topic, query.partition): led[(topic, query.partition)]}
    earliest = log_offsets(s, led, EARLIEST)
    latest = log_offsets(s, led, LATEST)
    page = Page([])
    reader = Reader(s, topic, led, page)
    chosen = starts(s, query, led, earliest, latest)
    for (_, partition), start in sorted(chosen.items(), key=lambda item: -latest[item[0]]):
        page.records += reader.read(partition, start, latest[(topic, partition)], query.limit, query.view)
        page.partitions += 1
        if page.fetched_bytes >= PAGE_BYTES:
            page.notes.append(f"stopped after {PAGE_BYTES // (1024 * 1024)} MiB fetched; narrow the query")
            break
    newest_first = query.mode == "newest"
    page.records.sort(key=lambda r: (r.timestamp, r.partition, r.offset), reverse=newest_first)
    del page.records[query.limit :]
    return page


def query_from(params: dict[str, Any]) -> Query:
    """A :class:`Query` from the page's query string, each value checked and bounded."""
    mode = params.get("mode", "newest")
    view = params.get("view", "auto")
    if mode not in MODES or view not in VIEWS:
        raise AdminError(f"mode must be one of {', '.join(MODES)} and view one of {', '.join(VIEWS)}")
    try:
        partition = int(params["partition"]) if params.get("partition", "") != "" else None
        offset = int(params.get("offset") or 0)
        limit = min(max(int(params.get("limit") or DEFAULT_RECORDS), 1), MAX_RECORDS)
    except ValueError as exc:
        raise AdminError(f"partition, offset and limit must be whole numbers ({exc})") from exc
    time_text = params.get("time") or ""
    time_ms = None
    if mode == "time":
        if not time_text:
            raise AdminError("give a time (YYYY-MM-DDTHH:mm[:SS], local time unless a zone follows)")
        time_ms = int(time_text) if time_text.isdigit() else parse_datetime_ms(time_text)
    if not (
        0 <= (partition or 0) <= INT32_MAX and 0 <= offset <= INT64_MAX and 0 <= (time_ms or 0) <= INT64_MAX
    ):
        raise AdminError("the partition, offset or time is out of range")
    return Query(mode, partition, offset, time_ms, limit, view)
