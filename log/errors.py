"""Typed failures of the storage engine, each naming the Kafka error code the broker answers with.

Every exception carries ``error_code``, the :class:`~wire.error_codes.ErrorCode` member the
broker answers with (an enum member, not a name resolved later, so a misspelling fails at
import rather than turning into UNKNOWN_SERVER_ERROR on the wire).  Record format errors come
from ``wire.record_batch`` and follow the same convention.
"""

from __future__ import annotations

from wire.error_codes import CodedError, ErrorCode


class LogError(CodedError):
    """Base of every error the storage engine raises on purpose (UNKNOWN_SERVER_ERROR unless a
    subclass names its code)."""


class OffsetOutOfRangeError(LogError, code=ErrorCode.OFFSET_OUT_OF_RANGE):
    """A read asked for an offset below the log start or above the log end."""


class UnexpectedAppendOffsetError(LogError):
    """A replicated batch starts below the log end or before the batch preceding it (Kafka's
    UnexpectedAppendOffsetException): the follower's log and its leader's disagree."""


class MessageTooLargeError(LogError, code=ErrorCode.MESSAGE_TOO_LARGE):
    """A batch is larger than the topic's max.message.bytes."""


class OutOfOrderSequenceError(LogError, code=ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER):
    """An idempotent producer skipped or repeated sequence numbers (not one of the last 5 batches)."""


class InvalidProducerEpochError(LogError, code=ErrorCode.INVALID_PRODUCER_EPOCH):
    """An idempotent producer wrote with an epoch older than the one the partition has seen."""


class InvalidTxnStateError(LogError, code=ErrorCode.INVALID_TXN_STATE):
    """A producer with a transaction open in the partition wrote a non-transactional batch."""


class TransactionCoordinatorFencedError(LogError, code=ErrorCode.TRANSACTION_COORDINATOR_FENCED):
    """A transaction marker came from a coordinator epoch older than one already seen for
    its producer: a zombie coordinator, whose decision must not be written."""


class InvalidConfigError(LogError, code=ErrorCode.INVALID_CONFIG):
    """A topic or broker log setting has an unknown name or a value Kafka would reject."""


class KafkaStorageError(LogError, code=ErrorCode.KAFKA_STORAGE_ERROR):
    """The disk failed under the log; the partition stays offline until its disk takes writes
    again (``PartitionLog.reopen_after_disk_error``, retried every ``log.offline.retry.ms``)."""
