"""The transaction coordinator: transactional ids, their producer epochs, and two-phase commit.

Kafka's protocol (KIP-98), on one node: InitProducerId gives a transactional id its producer id
and a new epoch (which fences every older instance of the producer, and aborts a transaction
that instance left open); AddPartitionsToTxn / AddOffsetsToTxn record the partitions a
transaction writes to; EndTxn commits or aborts it.  Ending is two-phase as in Kafka: the
decision (PrepareCommit / PrepareAbort) is written to ``__transaction_state`` first, then a
marker (a control batch) goes to every partition of the transaction, then the completion
(CompleteCommit / CompleteAbort).  A crash between the phases is finished at the next start-up,
when the replayed state still says Prepare*.  A transaction open longer than its timeout is
aborted with a bumped epoch, so the producer that left it learns it was fenced.

Sans-IO like the group coordinator: storage is synchronous record lists
(:class:`coordinator.coordinator.CoordinatorStorage`), markers are written through a callback
that reports the partitions it could not reach (retried until they succeed), producer ids come
from the broker's allocator, and time is driven from outside (:class:`PartitionedCoordinator`).
Since the markers are written before EndTxn is answered, the window in which Kafka answers
CONCURRENT_TRANSACTIONS only exists here while a marker cannot be written.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any

from coordinator.config import TransactionConfig
from coordinator.coordinator import CoordinatorStorage, StoredRecord
from coordinator.partitioned import PartitionedCoordinator
from coordinator.records import Record
from coordinator.txn_metadata import (
    COMPLETE,
    MAX_EPOCH,
    NO_EPOCH,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    PREPARING,
    TopicPartition,
    TxnMetadata,
    TxnState,
    by_topic,
    decode,
    decode_key,
    encode,
    tombstone,
)
from log.errors import KafkaStorageError, LogError
from wire.error_codes import ErrorCode
from wire.errors import DecodeError

if TYPE_CHECKING:
    from wire.messages import (
        DescribeTransactionsResponseTransactionStates,
        ListTransactionsResponseTransactionStates,
    )

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"

MarkerWriter = Callable[[int, int, bool, Collection[TopicPartition]], set[TopicPartition]]
"""``(producer_id, producer_epoch, commit, partitions)`` -> the partitions whose marker could not
be written (and will be tried again)."""


class TxnError(Exception):
    """A request refused with ``code``."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


class TransactionCoordinator(PartitionedCoordinator):
    """Every transactional id of every ``__transaction_state`` partition."""

    def __init__(
        self,
        config: TransactionConfig,
        storage: CoordinatorStorage,
        allocate_producer_id: Callable[[], int],
        write_markers: MarkerWriter,
        clock: Callable[[], int],
        forget_markers: Callable[[Collection[int]], None] | None = None,
    ) -> None:
        """``forget_markers(producer_ids)``: another coordinator took these producers'
        transactions over (a cluster), so markers still under way for them must stop."""
        super().__init__(config.state_log_partitions, storage, clock)
        self.config = config
        self._allocate = allocate_producer_id
        self._write_markers = write_markers
        self._forget_markers = forget_markers
        self._txns: dict[str, TxnMetadata] = {}
        self._by_producer: dict[int, str] = {}  # producer id -> transactional id, for produce checks

    # --- loading -------------------------------------------------------------------------

    def load_partition(self, partition: int) -> None:
        """Replay one partition, then finish what a crash interrupted there.

        A transaction whose decision was written (Prepare*) gets its markers and completion;
        an open one gets its timeout again, counted from its start.
        """
        if self._mark_started():
            self._schedule_expiration()
        for stored in self._storage.read(partition):
            if isinstance(stored, StoredRecord):  # the topic holds no transactions of its own
                self._replay(stored.key, stored.value)
        self._loaded.add(partition)
        for metadata in list(self._txns.values()):
            if self.partition_for(metadata.transactional_id) != partition:
                continue
            if metadata.state in PREPARING:
                self._complete(metadata, metadata.state is TxnState.PREPARE_COMMIT)
            elif metadata.state is TxnState.ONGOING:
                self._schedule_timeout(metadata)

    def forget_partition(self, partition: int) -> None:
        forgotten = set()
        for transactional_id in [t for t in self._txns if self.partition_for(t) == partition]:
            producer_id = self._txns.pop(transactional_id).producer_id
            self._by_producer.pop(producer_id, None)
            forgotten.add(producer_id)
        if self._forget_markers is not None:
            self._forget_markers(forgotten)

    def _replay(self, key: bytes, value: bytes | None) -> None:
        try:
            transactional_id = decode_key(key)
            if value is None:
                self._txns.pop(transactional_id, None)
            else:
                metadata = self._txns[transactional_id] = decode(transactional_id, value)
                self._by_producer[metadata.producer_id] = transactional_id
        except (DecodeError, ValueError) as error:
            log.warning("skipping undecodable %s record: %s", TRANSACTION_STATE_TOPIC, error)

    def _write(self, transactional_id: str, record: Record) -> None:
        """Persist one record; TxnError(NOT_COORDINATOR) if the log refuses it (clients retry)."""
        try:
            self._storage.append(self.partition_for(transactional_id), [record], self._clock())
        except (OSError, KafkaStorageError, LogError) as error:
            log.error("cannot append to %s for %s: %s", TRANSACTION_STATE_TOPIC, transactional_id, error)
            raise TxnError(ErrorCode.NOT_COORDINATOR) from error

    def _transition(self, metadata: TxnMetadata, **changes: Any) -> TxnMetadata:
        """Write ``metadata`` with ``changes``, then (only then) make it the state."""
        updated = dataclasses.replace(metadata, last_update_ms=self._clock(), **changes)
        updated.partitions = set(updated.partitions)
        self._write(metadata.transactional_id, encode(updated))
        self._txns[metadata.transactional_id] = updated
        self._by_producer[updated.producer_id] = updated.transactional_id
        return updated

    def _check_available(self, transactional_id: str) -> None:
        if not transactional_id:
            raise TxnError(ErrorCode.INVALID_REQUEST)
        error = self.availability(transactional_id)
        if error is not ErrorCode.NONE:
            raise TxnError(error)

    # --- InitProducerId ------------------------------------------------------------------

    def init_producer_id(
        self, transactional_id: str, timeout_ms: int, producer_id: int, producer_epoch: int
    ) -> tuple[int, int]:
        """(producer id, epoch) for the newest instance of ``transactional_id``.

        ``producer_id``/``producer_epoch`` (InitProducerId v3+, KIP-360) are what the calling
        producer last had, or -1: a producer that is not the current instance is fenced, and
        one naming the epoch it had before its last init retries that init (its answer was
        lost).  An open transaction of an older instance is aborted first; Kafka answers that
        call CONCURRENT_TRANSACTIONS and lets the client retry, here the abort is done before
        answering, so the caller gets the epoch its retry would have got.
        """
        self._check_available(transactional_id)
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            raise TxnError(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        metadata = self._txns.get(transactional_id)
        if metadata is None:
            created = self._transition(TxnMetadata(transactional_id, self._allocate(), 0, timeout_ms))
            return created.producer_id, created.producer_epoch
        if metadata.state in PREPARING:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        expected = producer_id != NO_PRODUCER_ID
        if expected and not self._may_init(metadata, producer_id, producer_epoch):
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        if metadata.state is TxnState.ONGOING:
            metadata = self._fence_and_abort(metadata)
            if metadata.state is not TxnState.COMPLETE_ABORT:
                raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        current = metadata.producer_epoch
        if expected and producer_epoch != current:
            if producer_epoch == metadata.last_producer_epoch:
                return metadata.producer_id, current
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        if current >= MAX_EPOCH:
            next_id, next_epoch = self._allocate(), 0
        else:
            next_id, next_epoch = metadata.producer_id, current + 1
        bumped = self._transition(
            metadata,
            producer_id=next_id,
            producer_epoch=next_epoch,
            last_producer_epoch=current if expected else NO_EPOCH,
            previous_producer_id=metadata.producer_id if next_id != metadata.producer_id else NO_PRODUCER_ID,
            timeout_ms=timeout_ms,
            state=TxnState.EMPTY,
            partitions=set(),
            start_ms=NO_TIMESTAMP,
        )
        return bumped.producer_id, bumped.producer_epoch

    @staticmethod
    def _may_init(metadata: TxnMetadata, producer_id: int, producer_epoch: int) -> bool:
        """KIP-360: the caller names this id's producer id, or the one it had before its epoch
        ran out."""
        if producer_id == metadata.producer_id:
            return True
        return producer_id == metadata.previous_producer_id and producer_epoch >= MAX_EPOCH

    # --- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------

    def _current(self, transactional_id: str, producer_id: int, producer_epoch: int) -> TxnMetadata:
        """The id's state, if the caller is its current producer instance."""
        self._check_available(transactional_id)
        metadata = self._txns.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if metadata.producer_epoch != producer_epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        return metadata

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> None:
        """Make ``partitions`` part of the producer's transaction, starting one if none is open."""
        metadata = self._current(transactional_id, producer_id, producer_epoch)
        if metadata.state in PREPARING:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if metadata.state is TxnState.DEAD:
            raise TxnError(ErrorCode.INVALID_TXN_STATE)
        wanted = set(partitions)
        if metadata.state is TxnState.ONGOING and wanted <= metadata.partitions:
            return
        starting = metadata.state is not TxnState.ONGOING
        updated = self._transition(
            metadata,
            state=TxnState.ONGOING,
            partitions=metadata.partitions | wanted,
            start_ms=self._clock() if starting else metadata.start_ms,
        )
        if starting:
            self._schedule_timeout(updated)

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn's verify-only form (KIP-890): which partitions the open
        transaction already has; the others are TRANSACTION_ABORTABLE."""
        metadata = self._current(transactional_id, producer_id, producer_epoch)
        if metadata.state in PREPARING:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        ongoing = metadata.state is TxnState.ONGOING
        return {
            tp: ErrorCode.NONE if ongoing and tp in metadata.partitions else ErrorCode.TRANSACTION_ABORTABLE
            for tp in partitions
        }

    def ongoing_with(self, producer_id: int, producer_epoch: int, partition: TopicPartition) -> bool:
        """Whether ``partition`` is in the open transaction of this producer instance (a
        transactional produce to a partition not added first is refused, as KIP-890 has it)."""
        metadata = self._txns.get(self._by_producer.get(producer_id, ""))
        return (
            metadata is not None
            and metadata.state is TxnState.ONGOING
            and metadata.matches(producer_id, producer_epoch)
            and partition in metadata.partitions
        )

    # --- EndTxn --------------------------------------------------------------------------

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        bump_epoch: bool = False,
    ) -> tuple[int, int]:
        """Commit or abort the open transaction; the (producer id, epoch) to use from now on.

        Kafka's rules per state (transaction version 1): a retry of a completed end succeeds
        again, ending the other way or ending nothing is INVALID_TXN_STATE.  With
        ``bump_epoch`` (EndTxn v5, transaction version 2 of KIP-890) the transaction ends under
        the next epoch, so no late write of it can join the next transaction; a request under
        the epoch before that is a retry, and an abort may also end an empty transaction.
        """
        self._check_available(transactional_id)
        metadata = self._txns.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            raise TxnError(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if bump_epoch:
            return self._end_bumping(metadata, producer_epoch, commit)
        if metadata.producer_epoch != producer_epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        finished, preparing = _end_states(commit)
        if metadata.state is TxnState.ONGOING:
            return self._end(metadata, commit, metadata.producer_epoch)
        if metadata.state is finished:
            return metadata.producer_id, metadata.producer_epoch
        if metadata.state is preparing:
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS)
        raise TxnError(ErrorCode.INVALID_TXN_STATE)

    def _end_bumping(self, metadata: TxnMetadata, producer_epoch: int, commit: bool) -> tuple[int, int]:
        """EndTxn v5 (transaction version 2), as Kafka's table has it."""
        retry = producer_epoch == metadata.producer_epoch - 1
        if not retry and producer_epoch != metadata.producer_epoch:
            raise TxnError(ErrorCode.PRODUCER_FENCED)
        finished, preparing = _end_states(commit)
        state = metadata.state
        if state in PREPARING:
            if state is not preparing:
                raise TxnError(ErrorCode.INVALID_TXN_STATE if retry else ErrorCode.PRODUCER_FENCED)
            raise TxnError(ErrorCode.CONCURRENT_TRANSACTIONS if retry else ErrorCode.PRODUCER_FENCED)
        if retry:
            if state is finished:
                return metadata.producer_id, metadata.producer_epoch
            if state in (TxnState.ONGOING, TxnState.EMPTY):
                raise TxnError(ErrorCode.PRODUCER_FENCED)
            raise TxnError(ErrorCode.INVALID_TXN_STATE)
        if state is TxnState.ONGOING or not commit:
            # An abort ends whatever there is, even nothing (an empty transaction).
            return self._end(metadata, commit, metadata.producer_epoch + 1)
        raise TxnError(ErrorCode.INVALID_TXN_STATE)

    def _end(self, metadata: TxnMetadata, commit: bool, epoch: int) -> tuple[int, int]:
        """Decide (Prepare*), then write the markers and complete."""
        self._timer.cancel(("timeout", metadata.transactional_id))
        prepared = self._transition(
            metadata,
            state=_end_states(commit)[1],
            producer_epoch=epoch,
            last_producer_epoch=metadata.producer_epoch if epoch != metadata.producer_epoch else NO_EPOCH,
        )
        self._complete(prepared, commit)
        current = self._txns[metadata.transactional_id]
        return current.producer_id, current.producer_epoch

    def _complete(self, metadata: TxnMetadata, commit: bool) -> None:
        """Markers for a decided transaction, then its completion; what fails is retried."""
        unreached = self._write_markers(
            metadata.producer_id, metadata.producer_epoch, commit, metadata.partitions
        )
        transactional_id = metadata.transactional_id
        if unreached:
            # Routine in a cluster (markers to other brokers are under way); the writer logs failures.
            log.debug(
                "transaction %s: markers to %s not written yet; retrying",
                transactional_id,
                ", ".join(f"{t}-{p}" for t, p in sorted(unreached)),
            )
            self._retry_later(transactional_id, lambda: self._complete(self._txns[transactional_id], commit))
            return
        try:
            self._transition(
                metadata,
                state=TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT,
                partitions=set(),
            )
        except TxnError:
            self._retry_later(transactional_id, lambda: self._complete(self._txns[transactional_id], commit))

    def transactional_id_of(self, producer_id: int) -> str | None:
        """The transactional id whose current producer id this is, if coordinated here."""
        return self._by_producer.get(producer_id)

    def markers_written(self, producer_id: int) -> None:
        """The marker writer finished what it reported unreached for this producer's
        transaction: complete it now rather than at the next retry."""
        transactional_id = self._by_producer.get(producer_id)
        if transactional_id is not None:
            self._timer.advance(("retry", transactional_id), self._clock())

    def _retry_later(self, transactional_id: str, action: Callable[[], None]) -> None:
        self._timer.schedule(("retry", transactional_id), self._clock() + self.config.marker_retry_ms, action)

    def _fence_and_abort(self, metadata: TxnMetadata) -> TxnMetadata:
        """Abort an open transaction under a bumped epoch, so its producer is fenced.

        Kafka does this when a new instance initialises (the old one may still be writing)
        and when the transaction times out.
        """
        self._timer.cancel(("timeout", metadata.transactional_id))
        prepared = self._transition(
            metadata,
            producer_epoch=metadata.producer_epoch + 1,
            last_producer_epoch=NO_EPOCH,
            state=TxnState.PREPARE_ABORT,
        )
        self._complete(prepared, commit=False)
        return self._txns[metadata.transactional_id]

    # --- timers --------------------------------------------------------------------------

    def _schedule_timeout(self, metadata: TxnMetadata) -> None:
        transactional_id, epoch = metadata.transactional_id, metadata.producer_epoch

        def expire() -> None:
            current = self._txns.get(transactional_id)
            if current is None or current.state is not TxnState.ONGOING or current.producer_epoch != epoch:
                return
            log.info(
                "transaction %s timed out after %d ms; aborting it", transactional_id, current.timeout_ms
            )
            try:
                self._fence_and_abort(current)
            except TxnError:
                self._retry_later(transactional_id, expire)

        self._timer.schedule(("timeout", transactional_id), metadata.start_ms + metadata.timeout_ms, expire)

    def _schedule_expiration(self) -> None:
        self._timer.schedule(
            ("expiration",), self._clock() + self.config.remove_expired_interval_ms, self._expire_ids
        )

    def _expire_ids(self) -> None:
        """Forget ids unused for ``transactional.id.expiration.ms`` (none with an open transaction)."""
        now = self._clock()
        for transactional_id, metadata in list(self._txns.items()):
            idle = now - metadata.last_update_ms >= self.config.id_expiration_ms
            if idle and metadata.state in (COMPLETE | {TxnState.EMPTY}):
                try:
                    self._write(transactional_id, tombstone(transactional_id))
                except TxnError:
                    continue
                del self._txns[transactional_id]
                self._by_producer.pop(metadata.producer_id, None)
        self._schedule_expiration()

    # --- DescribeTransactions / ListTransactions -----------------------------------------

    def describe(self, transactional_id: str) -> DescribeTransactionsResponseTransactionStates:
        """One DescribeTransactions entry."""
        error = self.availability(transactional_id)
        metadata = self._txns.get(transactional_id)
        if error is ErrorCode.NONE and metadata is None:
            error = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        if error is not ErrorCode.NONE or metadata is None:
            return {
                "error_code": error,
                "transactional_id": transactional_id,
                "transaction_state": "",
                "transaction_timeout_ms": 0,
                "transaction_start_time_ms": -1,
                "producer_id": -1,
                "producer_epoch": -1,
                "topics": [],
            }
        return {
            "error_code": ErrorCode.NONE,
            "transactional_id": transactional_id,
            "transaction_state": metadata.state.kafka_name,
            "transaction_timeout_ms": metadata.timeout_ms,
            "transaction_start_time_ms": metadata.start_ms,
            "producer_id": metadata.producer_id,
            "producer_epoch": metadata.producer_epoch,
            "topics": [
                {"topic": topic, "partitions": ids} for topic, ids in by_topic(metadata.partitions).items()
            ],
        }

    def list_transactions(
        self, states: list[str], producer_ids: list[int], min_duration_ms: int, pattern: str | None
    ) -> tuple[ErrorCode, list[str], list[ListTransactionsResponseTransactionStates]]:
        """ListTransactions: (error, unknown state filters, matching transactions).

        Filters combine with AND; an empty filter matches everything; ``min_duration_ms`` (-1:
        any) keeps transactions that started longer ago than that (as in Kafka, one that never
        started passes); ``pattern`` is a regular expression the whole id must match.
        """
        error = self.listing_error()
        if error is not ErrorCode.NONE:
            return error, [], []
        wanted = {name: TxnState.by_kafka_name(name) for name in states}
        unknown = [name for name, state in wanted.items() if state is None]
        known = {state for state in wanted.values() if state is not None}
        if states and not known:
            return ErrorCode.NONE, unknown, []
        try:
            matcher = re.compile(pattern) if pattern else None
        except re.error:
            return ErrorCode.INVALID_REGULAR_EXPRESSION, unknown, []
        now = self._clock()
        listed: list[ListTransactionsResponseTransactionStates] = [
            {
                "transactional_id": metadata.transactional_id,
                "producer_id": metadata.producer_id,
                "transaction_state": metadata.state.kafka_name,
            }
            for metadata in self._txns.values()
            if (not known or metadata.state in known)
            and (not producer_ids or metadata.producer_id in producer_ids)
            and (min_duration_ms < 0 or now - metadata.start_ms > min_duration_ms)
            and metadata.state is not TxnState.DEAD
            and (matcher is None or matcher.fullmatch(metadata.transactional_id))
        ]
        return ErrorCode.NONE, unknown, listed


def _end_states(commit: bool) -> tuple[TxnState, TxnState]:
    """(the state a completed end reaches, the state while it is being completed)."""
    if commit:
        return TxnState.COMPLETE_COMMIT, TxnState.PREPARE_COMMIT
    return TxnState.COMPLETE_ABORT, TxnState.PREPARE_ABORT
