"""The two typed record batch errors, in their own module so that every ``wire`` module that
reads batches (framing, decompression, validation) can raise them without import cycles.

Each carries the Kafka error name the broker answers with: Kafka's CorruptRecordException
becomes CORRUPT_MESSAGE, its InvalidRecordException INVALID_RECORD.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = ["CorruptRecordError", "InvalidRecordError", "RecordBatchError", "RecordErrors"]


class RecordBatchError(ValueError):
    """Base of the record batch errors; ``error_name`` is the Kafka error code name to answer."""

    error_name: ClassVar[str] = "CORRUPT_MESSAGE"


class CorruptRecordError(RecordBatchError):
    """The bytes are damaged: bad CRC, impossible length, batch cut short, undecodable payload."""

    error_name = "CORRUPT_MESSAGE"


class InvalidRecordError(RecordBatchError):
    """The bytes are intact but break a protocol rule (count vs offsets, control batch, ...)."""

    error_name = "INVALID_RECORD"


class RecordErrors(InvalidRecordError):
    """Some records of a batch break a per-record rule.  Kafka answers INVALID_RECORD and lists
    them in the Produce response's ``record_errors`` by their index in the batch."""

    def __init__(self, indices: list[int], reason: str) -> None:
        super().__init__(reason)
        self.indices = indices
        self.reason = reason
