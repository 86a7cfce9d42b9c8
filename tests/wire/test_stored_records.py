"""Internal topics' keys and values through the codecs generated from their declarations."""

from __future__ import annotations

import struct

import pytest

from wire import stored_records
from wire.errors import DecodeError
from wire.internal_records.transaction_state import TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE


def test_a_key_starts_with_its_record_type_and_a_value_with_its_version() -> None:
    key = stored_records.encode(TRANSACTION_LOG_KEY, stored_records.KEY_VERSION, {"transactional_id": "tx"})
    assert key == struct.pack(">hh2s", 0, 2, b"tx")
    assert stored_records.decode(TRANSACTION_LOG_KEY, key) == {"transactional_id": "tx"}


@pytest.mark.parametrize("version", [0, 1])
def test_values_round_trip_in_every_version(version: int) -> None:
    value = {
        "producer_id": 7,
        "producer_epoch": 2,
        "transaction_timeout_ms": 60_000,
        "transaction_status": 1,
        "transaction_partitions": [{"topic": "t", "partition_ids": [0, 3]}],
        "transaction_last_update_timestamp_ms": 11,
        "transaction_start_timestamp_ms": 10,
    }
    tagged = {"next_producer_id": 8, "next_producer_epoch": 0, "client_transaction_version": 2}
    encoded = stored_records.encode(TRANSACTION_LOG_VALUE, version, value | (tagged if version else {}))
    assert stored_records.read_prefix(encoded) == version
    decoded = stored_records.decode(TRANSACTION_LOG_VALUE, encoded)
    assert {key: decoded[key] for key in value} == value
    if version:
        assert {key: decoded[key] for key in tagged} == tagged


def test_an_unknown_value_version_or_truncated_record_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="version 9"):
        stored_records.decode(TRANSACTION_LOG_VALUE, struct.pack(">h", 9))
    with pytest.raises(DecodeError):
        stored_records.decode(TRANSACTION_LOG_VALUE, struct.pack(">hq", 0, 7))
    with pytest.raises(DecodeError):
        stored_records.read_prefix(b"\x00")
