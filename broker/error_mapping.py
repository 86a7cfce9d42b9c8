"""Turning storage and record-format exceptions into Kafka error codes.

The log engine and ``wire.record_batch`` stay independent of the error-code enum: their
exceptions carry Kafka's error *name*, and this one lookup maps it to the number.
"""

from __future__ import annotations

from wire.error_codes import ErrorCode


def error_code_of(exc: Exception) -> ErrorCode:
    """The Kafka error code an engine exception stands for (UNKNOWN_SERVER_ERROR if none)."""
    name = getattr(exc, "error_name", "UNKNOWN_SERVER_ERROR")
    return ErrorCode.__members__.get(name, ErrorCode.UNKNOWN_SERVER_ERROR)
