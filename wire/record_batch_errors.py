r"""The two typed record batch errors, in their own module so that every ``wire`` module that
reads batches (framing, decompression, validation) can raise them without import cycles.

Each carries the Kafka error code the broker answers with: Kafka's CorruptRecordException
becomes CORRUPT_MESSAGE, its InvalidRecordException INVALID_RECORD.  They are
:class:`~wire.errors.WireError`\ s: a peer's bad bytes, like every other decoding failure.
"""

from __future__ import annotations

from wire.error_codes import CodedError, ErrorCode
from wire.errors import WireError

__all__ = [
    "CorruptRecordError",
    "DecompressionLimitError",
    "InvalidRecordError",
    "RecordBatchError",
    "RecordErrors",
]


class RecordBatchError(WireError, CodedError, code=ErrorCode.CORRUPT_MESSAGE):
    """Base of the record batch errors; ``error_code`` is the Kafka error code to answer."""


class CorruptRecordError(RecordBatchError, code=ErrorCode.CORRUPT_MESSAGE):
    """The bytes are damaged: bad CRC, impossible length, batch cut short, undecodable payload."""


class DecompressionLimitError(CorruptRecordError):
    """The payload decompresses to more than the caller's limit (a decompression bomb, or just
    too much). Still CORRUPT_MESSAGE for a produced batch; PushTelemetry tells it apart from
    damaged bytes to answer TELEMETRY_TOO_LARGE."""


class InvalidRecordError(RecordBatchError, code=ErrorCode.INVALID_RECORD):
    """The bytes are intact but break a protocol rule (count vs offsets, control batch, ...)."""


class RecordErrors(InvalidRecordError):
    """Some records of a batch break a per-record rule.  Kafka answers INVALID_RECORD and lists
    them in the Produce response's ``record_errors`` by their index in the batch."""

    def __init__(self, indices: list[int], reason: str) -> None:
        super().__init__(reason)
        self.indices = indices
        self.reason = reason
