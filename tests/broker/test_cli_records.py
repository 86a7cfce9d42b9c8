"""The console commands' line formats on their own: what each accepts, refuses and writes back."""

from __future__ import annotations

import re

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from broker.cli.records import InputRecord, Layout, format_record, murmur2, parse_line, partition_for_key
from broker.cli.registry import AdminError
from wire.record_batch import Record

ALL_FIELDS = {"timestamp": True, "headers": True, "key": True}


@pytest.mark.parametrize(
    "key", [b"", b"a", b"ab", b"abc", b"abcd", b"abcde", "ключ-🔑".encode(), bytes(range(256))]
)
def test_murmur2_is_kafkas(key: bytes) -> None:
    expected = kafka_python_murmur2(key)  # Java's signed int; ours is the same 32 bits unsigned
    assert murmur2(key) == expected & 0xFFFFFFFF
    assert partition_for_key(key, 7) == (expected & 0x7FFFFFFF) % 7


def test_text_keeps_bytes_and_tabs_in_values() -> None:
    record = parse_line(b"17\ta:1,b:\tk\tv\twith tab \xff", Layout("text", **ALL_FIELDS))
    assert record == InputRecord(b"k", b"v\twith tab \xff", (("a", b"1"), ("b", b"")), 17, None)
    assert parse_line(b"only value", Layout("text", False, False, False)).value == b"only value"


def test_hex_and_json_round_trip() -> None:
    consumed = Record(5, 1_700_000_000_000, b"\x00k", b"\xff\x00", (("h", b"\x01"), ("n", None)))
    hex_layout = Layout("hex", **ALL_FIELDS)
    line = format_record("t", 0, 5, "CreateTime", consumed, hex_layout)
    assert line == b"1700000000000\th:01,n:\t006b\tff00"
    again = parse_line(line, hex_layout)
    assert (again.key, again.value, again.timestamp) == (b"\x00k", b"\xff\x00", 1_700_000_000_000)
    json_line = format_record("t", 0, 5, "CreateTime", consumed, Layout("json", False, False, False))
    parsed = parse_line(json_line, Layout("json", False, False, False))
    assert (parsed.key, parsed.value, parsed.headers) == (
        b"\x00k",
        b"\xff\x00",
        (("h", b"\x01"), ("n", None)),
    )
    as_dict = parse_line(
        b'{"value": "v", "headers": {"a": "1"}, "partition": 2}', Layout("json", False, False, False)
    )
    assert (as_dict.headers, as_dict.partition, as_dict.key) == ((("a", b"1"),), 2, None)


@pytest.mark.parametrize(
    ("line", "form", "message"),
    [
        (b"x\t\tk\tv", "text", "timestamp b'x' is not milliseconds"),
        (b"1\tnocolon\tk\tv", "text", "header b'nocolon' is not name:value"),
        (b"1\t\tzz\t00", "hex", "key is not hex digits"),
        (b"1\t\t00", "hex", "expected 4 tab-separated fields, got 3"),
        (b"[1]", "json", "each line must be a JSON object"),
        (b"{", "json", "not a JSON object"),
        (b'{"timestamp": "now"}', "json", '"timestamp" must be an integer'),
        (b'{"partition": true}', "json", '"partition" must be an integer'),
        (b'{"headers": [["a"]]}', "json", '"headers" must be'),
    ],
)
def test_refusals_say_what_is_wrong(line: bytes, form: str, message: str) -> None:
    with pytest.raises(AdminError, match=re.escape(message)):
        parse_line(line, Layout(form, **ALL_FIELDS))
