"""``__consumer_offsets`` on the log engine: coordinator records as ordinary record batches.

Each coordinator write becomes one v2 record batch (keys and values in Kafka's format, see
:mod:`coordinator.records`) appended to the group's partition, so a write is all-or-nothing
and Fetch can serve the topic like any other.  Replay reads the partition from its start and
yields every record, control batches (transaction markers) excepted.

The topic is created with ``cleanup.policy=compact`` (see :mod:`broker.group_timers`), so the
log cleaner keeps the latest record per key in every closed segment, as for any compacted
topic; replay time thus stays proportional to the live state plus the active segment, as in
Kafka, however many commits were made.
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


class LogStorage:
    """:class:`coordinator.coordinator.CoordinatorStorage` over partition logs.

    ``partition_log(p, create)`` returns the log of ``__consumer_offsets`` partition ``p``,
    creating the topic on first use when ``create`` is true (Kafka, too, creates the topic
    lazily), and ``on_append(p)`` lets the broker wake fetchers of that partition.
    """

    def __init__(self, partition_log: PartitionLogs, on_append: Callable[[int], None] | None = None) -> None:
        self._partition_log = partition_log
        self._on_append = on_append

    def append(self, partition: int, records: Sequence[Record], now_ms: int) -> None:
        log = self._partition_log(partition, True)
        if log is None:  # ``create`` makes the partition, or raises why it cannot
            raise RuntimeError(f"__consumer_offsets partition {partition} was not created")
        self._append_batch(log, records, now_ms)
        if self._on_append is not None:
            self._on_append(partition)

    def read(self, partition: int) -> Iterator[Record]:
        log = self._partition_log(partition, False)
        if log is None:
            return
        offset = log.log_start_offset
        while offset < log.high_watermark:  # what a read returns (the log end, for these logs)
            data = log.read(offset, READ_CHUNK_BYTES)
            for batch in scan_batches(data, from_client=False):
                if not batch.is_control:
                    for record in decode_records(data, batch):
                        if record.offset >= offset and record.key is not None:
                            yield record.key, record.value
                offset = batch.next_offset

    @staticmethod
    def _append_batch(log: PartitionLog, records: Sequence[Record], now_ms: int) -> None:
        batch = memoryview(
            encode_batch([BatchRecord(i, now_ms, key, value) for i, (key, value) in enumerate(records)])
        )
        log.append(batch, scan_batches(batch, from_client=False), 0, now_ms)
