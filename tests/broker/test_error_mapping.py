"""Every storage and record-format error answers with the Kafka code it is declared with."""

from __future__ import annotations

from broker.requests.error_mapping import error_code_of
from log import errors as log_errors
from wire import record_batch_errors
from wire.error_codes import ErrorCode


def _subclasses(base: type) -> list[type]:
    found = [base]
    for sub in base.__subclasses__():
        found += _subclasses(sub)
    return found


def test_each_engine_error_maps_to_its_own_code() -> None:
    classes = _subclasses(log_errors.LogError) + _subclasses(record_batch_errors.RecordBatchError)
    assert len(classes) > 8
    for cls in classes:
        assert isinstance(cls.error_code, ErrorCode), cls
        exc = cls([0], "r") if cls is record_batch_errors.RecordErrors else cls("r")
        assert error_code_of(exc) is cls.error_code
    assert error_code_of(log_errors.OffsetOutOfRangeError("r")) == ErrorCode.OFFSET_OUT_OF_RANGE
    assert error_code_of(record_batch_errors.InvalidRecordError("r")) == ErrorCode.INVALID_RECORD
    assert error_code_of(record_batch_errors.CorruptRecordError("r")) == ErrorCode.CORRUPT_MESSAGE


def test_anything_else_is_an_unknown_server_error() -> None:
    assert error_code_of(KeyError("x")) == ErrorCode.UNKNOWN_SERVER_ERROR
