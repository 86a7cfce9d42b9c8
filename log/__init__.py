"""The storage engine: partition logs of Kafka-format segments (synchronous, no trio).

See ``log.partition_log`` for the threading model and ``docs/INTERFACES.md`` for the contract.
"""

from log.config import LogConfig
from log.errors import (
    InvalidConfigError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    KafkaStorageError,
    LogError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
    UnexpectedAppendOffsetError,
)
from log.manager import LogManager
from log.partition_log import AppendInfo, FileSlice, PartitionLog

__all__ = [
    "AppendInfo",
    "FileSlice",
    "InvalidConfigError",
    "InvalidProducerEpochError",
    "InvalidTxnStateError",
    "KafkaStorageError",
    "LogConfig",
    "LogError",
    "LogManager",
    "MessageTooLargeError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "PartitionLog",
    "TransactionCoordinatorFencedError",
    "UnexpectedAppendOffsetError",
]
