"""Turning storage and record-format exceptions into Kafka error codes.

The log engine's and ``wire.record_batch``'s exceptions carry their ``ErrorCode``; anything
else a handler did not expect is UNKNOWN_SERVER_ERROR, as in Kafka.
"""

from __future__ import annotations

from log.errors import LogError
from wire.error_codes import ErrorCode
from wire.record_batch_errors import RecordBatchError


def error_code_of(exc: Exception) -> ErrorCode:
    """The Kafka error code an engine exception stands for (UNKNOWN_SERVER_ERROR if none)."""
    if isinstance(exc, (LogError, RecordBatchError)):
        return exc.error_code
    return ErrorCode.UNKNOWN_SERVER_ERROR
