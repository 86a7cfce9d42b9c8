"""``odradek dump-log`` on the files a real broker wrote: every batch, its CRC, the indexes
checked against their segments, never a byte changed; and damage found where it was made."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.cli.dump import BATCH_HEADERS
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.brokers import odradek_cli as odradek
from compat_tests.kit.drivers.base import Message, ProducerSettings
from compat_tests.kit.drivers.confluent import ConfluentDriver

pytestmark = pytest.mark.timeout(120)

TOPIC = "dumped"
RECORDS = 40
SEGMENT_FILES = (".log", ".index", ".timeindex", ".txnindex")


@pytest.fixture(scope="module")
def partition_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A stopped broker's partition with several segments, every batch indexed, and a committed
    and an aborted transaction."""
    overrides = {"log.segment.bytes": "1500", "log.index.interval.bytes": "1"}
    broker = OdradekProcess(tmp_path_factory.mktemp("dump-broker"), overrides).start()
    try:
        assert (
            odradek(
                "topics", "create", TOPIC, "--partitions", "1", "--bootstrap", broker.bootstrap
            ).returncode
            == 0
        )
        driver = ConfluentDriver(broker.bootstrap)
        with driver.producer(ProducerSettings()) as producer:
            for i in range(RECORDS):
                record = Message(b"value %d" % i, key=b"k%d" % i, headers=(("h", b"%d" % i),))
                producer.send(TOPIC, [record])  # one batch per record: each send flushes
        with driver.transactional_producer("dump-txn") as transactional:
            for commit in (True, False):
                transactional.begin()
                # sent (flushed) before it ends, so the abort has a marker too
                transactional.send(TOPIC, [Message(b"in a transaction")])
                (transactional.commit if commit else transactional.abort)()
    finally:
        broker.stop()
    yield broker.data_dir / f"{TOPIC}-0"


def digests(directory: Path) -> dict[str, tuple[str, int]]:
    return {
        p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(directory.iterdir())
        if p.is_file()
    }


def dump(*args: str) -> list[dict]:
    result = odradek("dump-log", *args, "--output", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_every_batch_and_index_entry_checks_out_and_nothing_changes(partition_dir: Path) -> None:
    before = digests(partition_dir)
    files = dump(str(partition_dir), "--print-data-log")
    assert digests(partition_dir) == before
    logs = [f for f in files if f["kind"] == "log"]
    assert len(logs) > 2  # several segments
    assert [f["problems"] for f in files] == [[] for _ in files]
    batches = [b for f in logs for b in f["batches"]]
    assert [b["baseOffset"] for b in batches] == list(range(len(batches)))  # one record each, contiguous
    assert all(b["crcValid"] for b in batches)
    data = [b for b in batches if not b["isControl"]]
    assert [r["value"] for b in data[:RECORDS] for r in b["records"]] == [
        f"value {i}" for i in range(RECORDS)
    ]
    assert data[3]["records"][0]["key"] == "k3" and data[3]["records"][0]["headers"] == [["h", "3"]]
    markers = [b for b in batches if b["isControl"]]
    assert [m["endTxnMarker"] for m in markers] == ["COMMIT", "ABORT"]
    assert all(m["isTransactional"] and m["producerId"] >= 0 for m in markers)
    assert {f["kind"] for f in files} >= {"index", "timeindex", "txnindex"}
    indexed = [e["offset"] for f in files if f["kind"] == "index" for e in f["entries"]]
    # index.interval.bytes=1: every append is indexed but each segment's first, as Kafka does
    assert len(indexed) == len(batches) - len(logs)
    (aborted,) = [e for f in files if f["kind"] == "txnindex" for e in f["entries"]]
    assert aborted["last"] == markers[1]["baseOffset"]


def test_text_form_fits_a_terminal(partition_dir: Path) -> None:
    first_log = str(sorted(partition_dir.glob("*.log"))[0])
    result = odradek("dump-log", first_log)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == [f"Dumping {first_log}", "Log starting offset: 0"]
    assert lines[2].split() == BATCH_HEADERS
    assert lines[4].split()[:3] == ["0", "0", "1"] and lines[4].split()[-3] == "ok"
    assert max(len(line) for line in lines[2:]) <= 80  # the table; the path above is as given
    with_data = odradek("dump-log", first_log, "--print-data-log").stdout
    assert "  | offset: 0 CreateTime: " in with_data and "key: k0 value: value 0 headers: [h:0]" in with_data


def damaged_copy(partition_dir: Path, tmp_path: Path) -> tuple[Path, dict]:
    copy = tmp_path / "copy"
    shutil.copytree(partition_dir, copy)
    stem = sorted(copy.glob("*.log"))[0].with_suffix("")
    (first,) = [f for f in dump(str(stem) + ".log") if f["kind"] == "log"]
    return stem, first


def test_flags_a_crc_mismatch(partition_dir: Path, tmp_path: Path) -> None:
    stem, segment = damaged_copy(partition_dir, tmp_path)
    second = segment["batches"][1]
    with open(f"{stem}.log", "r+b") as log:
        log.seek(second["position"] + second["size"] - 1)
        last = log.read(1)
        log.seek(-1, os.SEEK_CUR)
        log.write(bytes([last[0] ^ 0xFF]))
    (after,) = dump(f"{stem}.log")
    assert [b["crcValid"] for b in after["batches"][:3]] == [True, False, True]
    assert after["problems"] == [f"batch at offset 1 (byte {second['position']}): CRC mismatch"]
    text = odradek("dump-log", f"{stem}.log").stdout
    assert "BAD" in text and "PROBLEM: batch at offset 1" in text


def test_flags_a_torn_tail_and_bad_index_entries(partition_dir: Path, tmp_path: Path) -> None:
    stem, segment = damaged_copy(partition_dir, tmp_path)
    last = segment["batches"][-1]
    os.truncate(f"{stem}.log", last["position"] + 70)
    with open(f"{stem}.index", "ab") as index:
        index.write((1000).to_bytes(4, "big") + (3).to_bytes(4, "big") + b"\x00")
    with open(f"{stem}.timeindex", "ab") as index:
        index.write((5).to_bytes(8, "big") + (0).to_bytes(4, "big"))
    log, index, timeindex = dump(f"{stem}.log", f"{stem}.index", f"{stem}.timeindex")
    assert log["problems"] == [
        f"byte {last['position']}: the batch declares {last['size']} bytes, only 70 remain"
    ]
    os.truncate(f"{stem}.log", last["position"] + 10)
    (short,) = dump(f"{stem}.log")
    assert short["problems"] == [f"byte {last['position']}: 10 bytes left, too few for a batch header (61)"]
    assert index["problems"][0] == "1 trailing bytes do not make a whole entry"
    assert any("(1000, 3): position 3 is not the start of a batch" in p for p in index["problems"])
    assert any("(5, 0): the batch ending there has max timestamp" in p for p in timeindex["problems"])
    assert any("(5, 0): timestamp is not above the previous" in p for p in timeindex["problems"])


def test_progress_on_a_terminal_and_errors(partition_dir: Path) -> None:
    primary, secondary = os.openpty()
    try:
        result = odradek("dump-log", str(partition_dir), stderr=secondary)
        os.close(secondary)
        drawn = os.read(primary, 65536)
    finally:
        os.close(primary)
    assert result.returncode == 0
    assert b"reading logs [" in drawn and b"100%" in drawn
    assert "reading logs" not in odradek("dump-log", str(partition_dir)).stderr
    missing = odradek("dump-log", str(partition_dir / "nothing.log"))
    assert missing.returncode == 1 and "no segment files to dump" in missing.stderr
    not_segment = odradek("dump-log", str(partition_dir / "partition.checkpoint"))
    assert not_segment.returncode == 1 and "not a segment file" in not_segment.stderr
