"""``__consumer_offsets`` on the log engine: coordinator records as ordinary record batches.

Each coordinator write becomes one v2 record batch (keys and values in Kafka's format, see
:mod:`coordinator.records`) appended to the group's partition, so a write is all-or-nothing
and Fetch can serve the topic like any other.  Replay reads the partition from its start and
yields every record, control batches (transaction markers) excepted.

The topic is compacted the simple way: this class keeps the latest value of every live key
(what a compacted log converges to), and once the log holds more than twice as many records
as there are live keys, it appends those live records again and moves the log start past
everything older (``delete_records``).  Replay time thus stays proportional to the live
state, however many commits were made.  A crash half-way through leaves the old records in
place, and replaying both old and rewritten records gives the same state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from log.partition_log import PartitionLog
from wire.record_batch import Record as BatchRecord
from wire.record_batch import decode_records, encode_batch, scan_batches

Record = tuple[bytes, bytes | None]
PartitionLogs = Callable[[int, bool], PartitionLog | None]

# Replay reads this much at a time; a batch larger than that is still read whole.
READ_CHUNK_BYTES = 1 << 20
# Records per batch when rewriting live records (well below max.message.bytes).
REWRITE_BATCH_RECORDS = 500


class LogStorage:
    """:class:`coordinator.coordinator.CoordinatorStorage` over partition logs.

    ``partition_log(p, create)`` returns the log of ``__consumer_offsets`` partition ``p``,
    creating the topic on first use when ``create`` is true (Kafka, too, creates the topic
    lazily), and ``on_append(p)`` lets the broker wake fetchers of that partition.
    ``compact_after`` is the least number of records a partition holds before a rewrite.
    """

    def __init__(
        self,
        partition_log: PartitionLogs,
        on_append: Callable[[int], None] | None = None,
        compact_after: int = 10_000,
    ) -> None:
        self._partition_log = partition_log
        self._on_append = on_append
        self._compact_after = compact_after
        self._live: dict[int, dict[bytes, bytes]] = {}
        self._records: dict[int, int] = {}

    def append(self, partition: int, records: Sequence[Record], now_ms: int) -> None:
        log = self._partition_log(partition, True)
        assert log is not None
        self._append_batch(log, records, now_ms)
        self._track(partition, records)
        if self._records[partition] >= max(self._compact_after, 2 * len(self._live[partition])):
            self._rewrite(partition, log, now_ms)
        if self._on_append is not None:
            self._on_append(partition)

    def read(self, partition: int) -> Iterator[Record]:
        self._live[partition] = {}
        self._records[partition] = 0
        log = self._partition_log(partition, False)
        if log is None:
            return
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            data = log.read(offset, READ_CHUNK_BYTES)
            for batch in scan_batches(data, from_client=False):
                if not batch.is_control:
                    for record in decode_records(data, batch):
                        if record.offset >= offset and record.key is not None:
                            self._track(partition, [(record.key, record.value)])
                            yield record.key, record.value
                offset = batch.next_offset

    @staticmethod
    def _append_batch(log: PartitionLog, records: Sequence[Record], now_ms: int) -> None:
        batch = memoryview(
            encode_batch([BatchRecord(i, now_ms, key, value) for i, (key, value) in enumerate(records)])
        )
        log.append(batch, scan_batches(batch, from_client=False), 0, now_ms)

    def _track(self, partition: int, records: Sequence[Record]) -> None:
        live = self._live.setdefault(partition, {})
        for key, value in records:
            if value is None:
                live.pop(key, None)
            else:
                live[key] = value
        self._records[partition] = self._records.get(partition, 0) + len(records)

    def _rewrite(self, partition: int, log: PartitionLog, now_ms: int) -> None:
        """Append the live records again, then drop every record before them."""
        start = log.log_end_offset
        live = list(self._live[partition].items())
        for first in range(0, len(live), REWRITE_BATCH_RECORDS):
            self._append_batch(log, live[first : first + REWRITE_BATCH_RECORDS], now_ms)
        log.delete_records(start)
        self._records[partition] = len(live)
