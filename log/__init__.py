"""The storage engine: partition logs of Kafka-format segments (synchronous, no trio).

See ``log.partition_log`` for the threading model and ``docs/INTERFACES.md`` for the contract.

The engine's classes (``LogManager``, ``PartitionLog`` and the types of its answers) load on
first use: a module that needs only ``log.config`` or ``log.errors`` (the broker's config
definitions, and through them every ``odradek`` admin command) does not load the engine.
"""

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from log.manager import LogManager
    from log.partition_log import AppendInfo, FileSlice, PartitionLog

_LAZY = {
    "LogManager": "log.manager",
    "AppendInfo": "log.partition_log",
    "FileSlice": "log.partition_log",
    "PartitionLog": "log.partition_log",
}


def __getattr__(name: str) -> Any:
    """The engine's classes, imported when first asked for (PEP 562)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'log' has no attribute {name!r}")


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
