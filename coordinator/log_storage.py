"""``__consumer_offsets`` on the log engine: coordinator records as ordinary record batches.

Each coordinator write becomes one v2 record batch (keys and values in Kafka's format, see
:mod:`coordinator.records`) appended to the group's partition, so a write is all-or-nothing
and Fetch can serve the topic like any other.  A transactional offset commit is a
transactional batch of its producer (id and epoch, no sequence: the coordinator is not one of
the producer's appends, as in Kafka), and the transaction's end is a marker written here by the
transaction coordinator.  Replay reads the partition from its start and yields every record,
with the producer of a transactional one, and every marker.

The topic is created with ``cleanup.policy=compact`` (see :mod:`broker.services.coordinators.group_timers`), so the
log cleaner keeps the latest record per key in every closed segment, as for any compacted
topic; replay time thus stays proportional to the live state plus the active segment, as in
Kafka, however many commits were made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from coordinator.coordinator import StoredMarker, StoredRecord
from coordinator.offsets import Producer
from coordinator.records import Record
from log.partition_log import PartitionLog
from wire.control_batch import read_end_txn_marker
from wire.record_batch import Record as BatchRecord
from wire.record_batch import decode_records, encode_batch, scan_batches

PartitionLogs = Callable[[int, bool], PartitionLog | None]

# One node is the only coordinator there ever was: its markers all carry epoch 0.
COORDINATOR_EPOCH = 0
# Replay reads this much at a time; a batch larger than that is still read whole.
READ_CHUNK_BYTES = 1 << 20


class LogStorage:
    """:class:`coordinator.coordinator.CoordinatorStorage` over partition logs.

    ``partition_log(p, create)`` returns the log of ``__consumer_offsets`` partition ``p``,
    creating the topic on first use when ``create`` is true (Kafka, too, creates the topic
    lazily); ``leader_epoch(p)`` is the epoch this broker leads ``p`` at, which every write
    carries, as every leader append does (in a cluster, followers truncate a deposed leader's
    unreplicated tail by these epochs); ``on_append(p)`` lets the broker wake fetchers of that
    partition.
    """

    def __init__(
        self,
        partition_log: PartitionLogs,
        leader_epoch: Callable[[int], int],
        on_append: Callable[[int], None] | None = None,
    ) -> None:
        self._partition_log = partition_log
        self._leader_epoch = leader_epoch
        self._on_append = on_append

    def append(
        self, partition: int, records: Sequence[Record], now_ms: int, producer: Producer | None = None
    ) -> None:
        log = self._log(partition)
        batch = memoryview(
            encode_batch(
                [BatchRecord(i, now_ms, key, value) for i, (key, value) in enumerate(records)],
                transactional=producer is not None,
                producer_id=producer[0] if producer else -1,
                producer_epoch=producer[1] if producer else -1,
            )
        )
        log.append(batch, scan_batches(batch, from_client=False), self._leader_epoch(partition), now_ms)
        self._appended(partition)

    def append_marker(self, partition: int, producer: Producer, commit: bool, now_ms: int) -> None:
        self._log(partition).append_marker(
            producer[0],
            producer[1],
            commit,
            COORDINATOR_EPOCH,
            now_ms,
            leader_epoch=self._leader_epoch(partition),
        )
        self._appended(partition)

    def _log(self, partition: int) -> PartitionLog:
        log = self._partition_log(partition, True)
        if log is None:  # ``create`` makes the partition, or raises why it cannot
            raise RuntimeError(f"partition {partition} of a coordinator topic was not created")
        return log

    def _appended(self, partition: int) -> None:
        if self._on_append is not None:
            self._on_append(partition)

    def read(self, partition: int) -> Iterator[StoredRecord | StoredMarker]:
        log = self._partition_log(partition, False)
        if log is None:
            return
        offset, end = log.log_start_offset, log.log_end_offset
        # Up to the log end, as Kafka's coordinators load: a replica that has just become the
        # leader knows a high watermark behind what its old leader acknowledged.
        while offset < end:
            data = log.read(offset, READ_CHUNK_BYTES, upto=end)
            if not data:
                break
            for batch in scan_batches(data, from_client=False):
                producer_id = batch.producer_id if batch.is_transactional else -1
                if batch.is_control:
                    marker = read_end_txn_marker(data, batch)
                    if marker is not None and batch.base_offset >= offset:
                        yield StoredMarker(producer_id, marker.is_commit)
                else:
                    for record in decode_records(data, batch):
                        if record.offset >= offset and record.key is not None:
                            yield StoredRecord(record.key, record.value, producer_id)
                offset = batch.next_offset
