"""Typed failures of the storage engine, each naming the Kafka error code the broker answers with.

Every exception carries ``error_code``, the :class:`~wire.error_codes.ErrorCode` member the
broker answers with (an enum member, not a name resolved later, so a misspelling fails at
import rather than turning into UNKNOWN_SERVER_ERROR on the wire).  Record format errors come
from ``wire.record_batch`` and follow the same convention.
"""

from __future__ import annotations

from typing import ClassVar

from wire.error_codes import ErrorCode


class LogError(Exception):
    """Base of every error the storage engine raises on purpose."""

    error_code: ClassVar[ErrorCode] = ErrorCode.UNKNOWN_SERVER_ERROR


class OffsetOutOfRangeError(LogError):
    """A read asked for an offset below the log start or above the log end."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class MessageTooLargeError(LogError):
    """A batch is larger than the topic's max.message.bytes."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class OutOfOrderSequenceError(LogError):
    """An idempotent producer skipped or repeated sequence numbers (not one of the last 5 batches)."""

    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(LogError):
    """An idempotent producer wrote with an epoch older than the one the partition has seen."""

    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(LogError):
    """A producer with a transaction open in the partition wrote a non-transactional batch."""

    error_code = ErrorCode.INVALID_TXN_STATE


class TransactionCoordinatorFencedError(LogError):
    """A transaction marker came from a coordinator epoch older than one already seen for
    its producer: a zombie coordinator, whose decision must not be written."""

    error_code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class InvalidConfigError(LogError):
    """A topic or broker log setting has an unknown name or a value Kafka would reject."""

    error_code = ErrorCode.INVALID_CONFIG


class KafkaStorageError(LogError):
    """The disk failed under the log; the partition stays offline until its disk takes writes
    again (``PartitionLog.reopen_after_disk_error``, retried every ``log.offline.retry.ms``)."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR
