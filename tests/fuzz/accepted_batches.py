"""The accepted-batch oracle: every batch the broker accepts is read back, record for record, by
librdkafka, the Java client and kafka-python.

A Produce the broker acknowledges promises every consumer that the records are stored and can
be read to the end of the partition.  A batch some client cannot read (a length Kafka reads as
null but librdkafka stops at, say) must be refused instead, with a Kafka error code.  One run
checks that promise against a real ``odradek serve``, in rounds of :data:`ROUND_BATCHES`
batches, each round on a fresh topic of :data:`PARTITIONS` partitions (deleted afterwards, so
memory stays bounded however many batches a run makes):

1. each batch (:func:`fuzzed_batch`) is a v2 batch with a correct CRC, odd in the ways a
   producer can be odd: record counts up to a few hundred (across the broker's validation
   chunks), keys, values and header values null, empty, long or with lengths below -1, header
   keys in and out of UTF-8, every codec, timestamp deltas negative and far (and a base
   timestamp hours ahead), LogAppendTime flags, idempotent producer ids, padded varints, odd
   record attributes, lying record counts, flipped bytes; it is produced with one raw Produce
   request (acks=all) to one of the round's partitions;
2. a refused batch must carry a Kafka error code.  An accepted one must be readable by Kafka's
   record format as a plain Python reader applies it (``wire.record_batch.decode_records``,
   independent of the broker's Cython reader), and what that reader finds is what the
   partition holds from the base offset the broker assigned;
3. each partition's end offset must be what the accepted batches add up to, and each client
   (confluent-kafka/librdkafka, kafka-python, the Java client in its own JVM) reads all the
   round's partitions from offset 0 to their ends with one consumer, and must get exactly the
   stored records: offsets, keys, values and headers (not timestamps: a LogAppendTime flag makes
   them the broker's).

The CI test (``tests/fuzz/test_accepted_batches.py``) makes one round with a fixed seed (2,000
batches, ~100,000 records, 30 s on this machine); the long mode, for a closing report (10,000
batches took 127 s)::

    python -m tests.fuzz.accepted_batches --seed 1 --batches 100000

prints batches, accepted and refused (by error), records each client read back, failures, and
the batches refused though no flaw was put in them (Odradek stricter than Kafka: padded
varints of up to five bytes, and records whose unused attributes byte is 0x80 or more, which
aiokafka's reader cannot frame; see ``wire.record_validation``);
``--batch I`` replays one batch of a seed.  Every failure names the seed and the batch.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import random
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from broker.client.admin_client import PRODUCE_VERSION, produce_body
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.base import ClientError
from compat_tests.kit.drivers.bulk import BulkClient
from compat_tests.kit.drivers.confluent import ConfluentClient
from compat_tests.kit.drivers.java import JAVA_CLIENT_VERSIONS, JavaProcess, JvmObject
from compat_tests.kit.drivers.kafka_python import KafkaPythonClient
from compat_tests.kit.raw_protocol import RawClient
from tests.fuzz.batches import Nullable, raw_batch, raw_record, refresh_crc
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode
from wire.primitives import encode_varint
from wire.record_batch import HEADER_SIZE, Compression, decode_records, scan_batches
from wire.record_batch_errors import RecordBatchError

PARTITIONS = 8
ROUND_BATCHES = 2000
READ_TIMEOUT_S = 90.0
JAVA_VERSION = JAVA_CLIENT_VERSIONS[-1]
LATEST = -1
_MAX_FAILURES_KEPT = 20
_SHOWN = 60  # characters of a value shown in a failure

Headers = tuple[tuple[str, bytes | None], ...]
Read = tuple[int, bytes | None, bytes | None, Headers]
"""A record as the oracle compares it: offset, key, value, headers."""


# --------------------------------------------------------------------------------------------
# Batches.


@dataclass(frozen=True)
class Fuzzed:
    """One generated batch and what is odd about it (for failure messages)."""

    index: int
    data: bytes
    how: str
    flaw: str | None  # how it breaks Kafka's rules (see _FLAWS); odd but valid if None


_CODECS = {
    Compression.NONE: "none",
    Compression.GZIP: "gzip",
    Compression.SNAPPY: "snappy",
    Compression.LZ4: "lz4",
    Compression.ZSTD: "zstd",
}
_BELOW_MINUS_ONE = (-2, -24, -64, -65, -(2**31))
_HEADER_KEYS = (b"h", b"trace-id", "\u00e9t\u00e9".encode(), "\u65e5\u672c".encode(), b"")
_NOT_UTF8 = (b"\xff\xfe", b"\xc3", b"a\x80b")
_LOG_APPEND_TIME = 0x08
_HOUR_MS = 3_600_000
_FLAWS = {
    None: 70,
    "a length below -1": 8,
    "a header key not UTF-8": 3,
    "varints beyond 5 bytes": 3,
    "record count off by one": 3,
    "flipped bytes": 5,
    "flipped compressed bytes": 3,
    "timestamps hours ahead": 2,
}
"""The ways a batch is broken (one at most), with their weights: none in most batches."""


def fuzzed_batch(seed: int, index: int, now_ms: int) -> Fuzzed:
    """Batch ``index`` of ``seed`` (the same bytes every time, bar timestamps from ``now_ms``)."""
    rng = random.Random(f"{seed}:{index}")
    (flaw,) = rng.choices(list(_FLAWS), list(_FLAWS.values()))
    odd = [flaw] if flaw else []
    count = rng.choice((rng.randint(1, 10), rng.randint(1, 10), rng.randint(11, 100), rng.randint(101, 300)))
    shape = rng.choice(("keyless", "keyed", "any"))
    varint = _varint_writer(rng, odd, beyond=flaw == "varints beyond 5 bytes")
    deltas = _timestamp_deltas(rng, count, odd)
    broken = rng.randrange(count)  # the record a flaw of one record goes to
    records = [
        _record(rng, i, shape, deltas[i], varint, odd, flaw if i == broken else None) for i in range(count)
    ]
    if flaw == "flipped bytes":
        records = [_flipped(rng, b"".join(records))]
    codec = rng.choice(list(_CODECS))
    data = raw_batch(
        records,
        codec=codec,
        base_timestamp=now_ms + (2 * _HOUR_MS if flaw == "timestamps hours ahead" else 0),
        max_delta=max(deltas) if rng.random() < 0.9 else rng.randint(-1000, 1000),
        attributes=_LOG_APPEND_TIME if _odd(rng, 0.05, odd, "LogAppendTime") else 0,
        producer=(rng.randrange(1 << 40), 0, 0) if _odd(rng, 0.1, odd, "idempotent") else (-1, -1, -1),
        count=count + (rng.choice((-1, 1)) if count > 1 else 1)
        if flaw == "record count off by one"
        else count,
    )
    if flaw == "flipped compressed bytes":
        data = _flipped_compressed(rng, data)
    how = f"{count} records, {_CODECS[codec]}, {shape}" + "".join(f", {what}" for what in dict.fromkeys(odd))
    return Fuzzed(index, data, how, flaw)


def _odd(rng: random.Random, chance: float, odd: list[str], what: str) -> bool:
    """Whether to make the batch odd (but valid) in way ``what`` (then noted in ``odd``)."""
    if rng.random() < chance:
        odd.append(what)
        return True
    return False


def _varint_writer(rng: random.Random, odd: list[str], *, beyond: bool) -> Callable[[int], bytes]:
    """Kafka's varints, or some of them overlong: padded with continuation bytes that add
    nothing, to 5 bytes at most (Kafka's clients read those), or ``beyond`` (Java cannot)."""
    if not beyond and not _odd(rng, 0.02, odd, "overlong varints"):
        return encode_varint
    sizes = (6, 7, 10) if beyond else (2, 3, 5)

    def overlong(value: int) -> bytes:
        canonical = encode_varint(value)
        size = rng.choice(sizes)
        if rng.random() < 0.7 or len(canonical) >= size:
            return canonical
        return (
            canonical[:-1] + bytes([canonical[-1] | 0x80]) + b"\x80" * (size - len(canonical) - 1) + b"\x00"
        )

    return overlong


def _timestamp_deltas(rng: random.Random, count: int, odd: list[str]) -> list[int]:
    if not _odd(rng, 0.15, odd, "far timestamps"):
        return sorted(rng.randint(0, 20) for _ in range(count))  # a producer within its linger
    return [rng.randint(-100_000, 100_000) for _ in range(count)]


def _record(
    rng: random.Random,
    index: int,
    shape: str,
    delta: int,
    varint: Callable[[int], bytes],
    odd: list[str],
    flaw: str | None,
) -> bytes:
    """One record of a batch's ``shape``, broken by ``flaw`` where the flaw is in a record."""
    if shape == "keyless":
        key, value, headers = None, _value(rng, odd, nulls=False), []
    elif shape == "keyed":
        key, value = b"key-%d" % rng.randrange(1000), _value(rng, odd, nulls=True)
        headers = [(b"trace-id", rng.randbytes(8))] if rng.random() < 0.3 else []
    else:
        key, value = _nullable(rng), _nullable(rng)
        headers = [(rng.choice(_HEADER_KEYS), _nullable(rng)) for _ in range(rng.randint(0, 3))]
    if flaw == "a length below -1":
        below = rng.choice(_BELOW_MINUS_ONE)
        where = rng.choice(("key", "value", "header value"))
        if where == "key":
            key = below
        elif where == "value":
            value = below
        else:
            headers = [*headers, (b"h", below)]
    if flaw == "a header key not UTF-8":
        headers = [*headers, (rng.choice(_NOT_UTF8), b"x")]
    attributes = 0
    if index == 0 and rng.random() < 0.02:  # unused by Kafka; aiokafka reads 0x80 on as a varint
        attributes = rng.randrange(1, 256)
        odd.append("record attributes from 0x80" if attributes >= 0x80 else "record attributes")
    return raw_record(index, key, value, headers, delta, attributes=attributes, varint=varint)


def _value(rng: random.Random, odd: list[str], *, nulls: bool) -> bytes | None:
    if nulls and rng.random() < 0.05:
        return None
    size = rng.choice((0, rng.randint(1, 60), rng.randint(60, 300), rng.randint(300, 2000)))
    if _odd(rng, 0.01, odd, "long values"):
        size = rng.randint(8000, 40000)
    return rng.randbytes(size) if rng.random() < 0.5 else (b"%d," % rng.randrange(10**6)) * (size // 7 + 1)


def _nullable(rng: random.Random) -> Nullable:
    """A key, value or header value: null, empty or bytes."""
    roll = rng.random()
    if roll < 0.25:
        return None
    if roll < 0.4:
        return b""
    return rng.randbytes(rng.choice((1, 10, 100, 1000)))


def _flipped(rng: random.Random, records: bytes) -> bytes:
    flipped = bytearray(records)
    for _ in range(rng.randint(1, 3)):
        flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
    return bytes(flipped)


def _flipped_compressed(rng: random.Random, data: bytes) -> bytes:
    batch = bytearray(data)
    if len(batch) > HEADER_SIZE:
        batch[rng.randrange(HEADER_SIZE, len(batch))] ^= 1 << rng.randrange(8)
        refresh_crc(batch)
    return bytes(batch)


# --------------------------------------------------------------------------------------------
# The oracle.


@dataclass
class Report:
    seed: int
    batches: int = 0
    accepted: int = 0
    records: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    reads: Counter[str] = field(default_factory=Counter)  # records each client read back
    failures: list[str] = field(default_factory=list)
    failed: int = 0
    refused_valid: int = 0  # refused though no flaw was put in (Odradek stricter than Kafka)
    stricter: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def strict(self, text: str) -> None:
        """Note a batch refused though it breaks none of Kafka's rules (not a failure: Odradek may
        be stricter than Kafka; the summary lists them)."""
        self.refused_valid += 1
        if len(self.stricter) < _MAX_FAILURES_KEPT:
            self.stricter.append(text)

    def fail(self, text: str) -> None:
        self.failed += 1
        if len(self.failures) < _MAX_FAILURES_KEPT:
            self.failures.append(f"seed {self.seed}: {text}")

    def summary(self) -> str:
        return "\n".join(
            [
                f"seed {self.seed}: {self.batches} batches in {self.seconds:.0f} s, {self.accepted} accepted "
                f"({self.records} records), {sum(self.refused.values())} refused",
                "refused: " + ", ".join(f"{name} {n}" for name, n in self.refused.most_common()),
                "read back: " + ", ".join(f"{client} {n}" for client, n in self.reads.items()),
                f"refused without a flaw put in (stricter than Kafka): {self.refused_valid}",
                *(f"  {text}" for text in self.stricter),
                f"failures: {self.failed}",
                *self.failures,
            ]
        )


@dataclass(frozen=True)
class Stored:
    """An accepted batch: where its records went and what they are by Kafka's record format
    (None: not readable by it, a failure already reported; its partition is not compared)."""

    partition: int
    base_offset: int
    records: list[Read] | None
    fuzzed: Fuzzed


def kafka_reading(data: bytes, base_offset: int) -> list[Read]:
    """The records of produced batch ``data`` as Kafka's record format reads them, at the
    offsets they get when the batch is stored at ``base_offset``."""
    batch = scan_batches(data, from_client=False)[0]
    return [
        (base_offset + record.offset, record.key, record.value, record.headers)
        for record in decode_records(data, batch)
    ]


def refused(fuzzed: Fuzzed, code: int, message: str | None, report: Report) -> None:
    """Count a refusal, which must carry a Kafka error code."""
    try:
        name = ErrorCode(code).name
    except ValueError:
        report.fail(f"batch {fuzzed.index} ({fuzzed.how}) refused with error {code}, not a Kafka error code")
        return
    report.refused[name] += 1
    if fuzzed.flaw is None:
        report.strict(f"batch {fuzzed.index} ({fuzzed.how}): {name}: {message}")


def produce(client: RawClient, topic: str, partition: int, fuzzed: Fuzzed, report: Report) -> Stored | None:
    """Produce one batch; the stored records if it was accepted (a failure is reported if the
    answer breaks the promise)."""
    report.batches += 1
    response = client.request(ApiKey.PRODUCE, PRODUCE_VERSION, produce_body(topic, {partition: fuzzed.data}))
    answer = response["responses"][0]["partition_responses"][0]
    if answer["error_code"]:
        refused(fuzzed, answer["error_code"], answer["error_message"], report)
        return None
    report.accepted += 1
    try:
        records = kafka_reading(fuzzed.data, answer["base_offset"])
    except RecordBatchError as exc:
        report.fail(f"batch {fuzzed.index} ({fuzzed.how}) was accepted, but Kafka's format refuses it: {exc}")
        return Stored(partition, answer["base_offset"], None, fuzzed)
    report.records += len(records)
    return Stored(partition, answer["base_offset"], records, fuzzed)


class _JavaReader(JvmObject):
    """A KafkaConsumer of the Java client in the JVM, reading raw records (null header values
    kept null, which the compatibility driver's consumer turns into empty ones)."""

    def __init__(self, jvm: JavaProcess, bootstrap: str) -> None:
        super().__init__(jvm, "consumer")
        self._call(
            "consumer_open",
            bootstrap=bootstrap,
            client_config=None,
            group=None,
            reset="earliest",
            group_protocol="classic",
            isolation="read_uncommitted",
        )

    def read(self, topic: str, ends: Mapping[int, int]) -> dict[int, list[Read]]:
        self._call("consumer_assign", positions=[[topic, p, 0] for p in ends])
        got: dict[int, list[Read]] = defaultdict(list)
        deadline = time.monotonic() + READ_TIMEOUT_S
        try:
            while not _complete(got, ends):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"not all records after {READ_TIMEOUT_S} s: {_progress(got, ends)}")
                for r in self._call("consumer_poll", max=10_000, timeout_ms=500):
                    headers = tuple((k, _unb64(v)) for k, v in r["headers"])
                    got[r["partition"]].append((r["offset"], _unb64(r["key"]), _unb64(r["value"]), headers))
        finally:
            self._call("consumer_close")
        return got


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _complete(got: Mapping[int, list[Read]], ends: Mapping[int, int]) -> bool:
    return all((got[p][-1][0] + 1 if got.get(p) else 0) >= end for p, end in ends.items())


def _progress(got: Mapping[int, list[Read]], ends: Mapping[int, int]) -> str:
    return ", ".join(f"{p}: {got[p][-1][0] + 1 if got.get(p) else 0}/{end}" for p, end in ends.items())


def _bulk_read(client: BulkClient, topic: str, ends: Mapping[int, int]) -> dict[int, list[Read]]:
    consumed = client.consume(topic, dict.fromkeys(ends, 0), until=ends, timeout_s=READ_TIMEOUT_S)
    return {
        p: [(c.offset, c.record.key, c.record.value, tuple(map(tuple, c.record.headers))) for c in records]
        for p, records in consumed.items()
    }


def _difference(expected: list[Read], got: list[Read], stored: list[Stored]) -> str | None:
    """The first record a client got wrong (None if it got them all), with its batch."""
    if got == expected:
        return None
    for index, want in enumerate(expected):
        have = got[index] if index < len(got) else None
        if have != want:
            batch = stored[bisect.bisect_right([s.base_offset for s in stored], want[0]) - 1].fuzzed
            return (
                f"offset {want[0]} of batch {batch.index} ({batch.how}): expected {_shown(want)}, "
                f"got {_shown(have) if have else 'nothing'}"
            )
    if len(got) > len(expected):
        return f"{len(got) - len(expected)} records past the end, from {_shown(got[len(expected)])}"
    return None


def _shown(read: Read) -> str:
    return repr(read)[:_SHOWN] + ("..." if len(repr(read)) > _SHOWN else "")


def _comparable(stored: Mapping[int, list[Stored]]) -> dict[int, list[Read]]:
    """What each partition must hold, for the partitions whose every batch Kafka's format reads."""
    return {
        p: [read for batch in batches for read in batch.records or ()]
        for p, batches in stored.items()
        if all(batch.records is not None for batch in batches)
    }


def check_reads(
    client: str, read: Callable[[], dict[int, list[Read]]], stored: Mapping[int, list[Stored]], report: Report
) -> None:
    """One client's reading of every partition against what the broker acknowledged."""
    try:
        got = read()
    except (ClientError, TimeoutError) as exc:
        report.fail(f"{client} could not read the accepted batches: {exc}")
        return
    for partition, expected in _comparable(stored).items():
        wrong = _difference(expected, got.get(partition, []), stored[partition])
        if wrong:
            report.fail(f"{client}, partition {partition}: {wrong}")
        report.reads[client] += len(got.get(partition, []))


def check_ends(ends: Mapping[int, int], stored: Mapping[int, list[Stored]], report: Report) -> None:
    """Each partition must end where its accepted batches do: nothing refused was stored."""
    for partition, expected in _comparable(stored).items():
        end = expected[-1][0] + 1 if expected else 0
        if ends[partition] != end:
            report.fail(f"partition {partition} ends at {ends[partition]}, its accepted batches at {end}")


def run_round(
    broker: OdradekProcess, jvm: JavaProcess, seed: int, indices: Iterable[int], topic: str, report: Report
) -> None:
    """Produce the batches of ``indices`` over a fresh topic's partitions, then check every
    partition's end and every client's reading of it."""
    stored: dict[int, list[Stored]] = {p: [] for p in range(PARTITIONS)}
    now_ms = int(time.time() * 1000)
    with RawClient(broker.bootstrap) as client:
        client.create_topic(topic, PARTITIONS)
        for index in indices:
            partition = index % PARTITIONS
            accepted = produce(client, topic, partition, fuzzed_batch(seed, index, now_ms), report)
            if accepted is not None:
                stored[partition].append(accepted)
        ends = client.list_offsets(topic, list(stored), LATEST)
        check_ends(ends, stored, report)
        readers = {
            "confluent-kafka": lambda: _bulk_read(ConfluentClient(broker.bootstrap), topic, ends),
            "kafka-python": lambda: _bulk_read(KafkaPythonClient(broker.bootstrap), topic, ends),
            f"java-{JAVA_VERSION}": lambda: _JavaReader(jvm, broker.bootstrap).read(topic, ends),
        }
        for name, read in readers.items():
            check_reads(name, read, stored, report)
        client.delete_topic(topic)


def _rounds(indices: Iterable[int], size: int) -> Iterator[list[int]]:
    it = iter(indices)
    while chunk := list(islice(it, size)):
        yield chunk


def run(workdir: Path, seed: int, indices: Iterable[int], *, round_batches: int = ROUND_BATCHES) -> Report:
    """Fuzz a fresh broker in ``workdir`` with the batches ``indices`` of ``seed``."""
    report = Report(seed)
    started = time.monotonic()
    broker = OdradekProcess(workdir / "broker").start()
    jvm = JavaProcess(JAVA_VERSION, workdir / "java.log")
    try:
        for number, indices_of_round in enumerate(_rounds(indices, round_batches)):
            run_round(broker, jvm, seed, indices_of_round, f"accepted-{number}", report)
            if report.failures:
                break  # a broken promise is enough to look at; the seed replays it
            print(f"round {number}: {report.batches} batches, {report.failed} failures", flush=True)
    finally:
        jvm.stop()
        if broker.is_running:
            broker.stop()
    report.seconds = time.monotonic() - started
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batches", type=int, default=ROUND_BATCHES, help="batches to produce")
    parser.add_argument("--seed", type=int, default=None, help="seed (default: random, printed)")
    parser.add_argument("--batch", type=int, default=None, help="replay only this batch of the seed")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="broker data and logs (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    indices = range(args.batches) if args.batch is None else [args.batch]
    print(f"fuzzing with seed {seed}", flush=True)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="odradek-accepted-"))
    report = run(workdir, seed, indices)
    print(report.summary())
    if report.failed:
        print(f"broker log and data kept: {workdir}")
    elif args.workdir is None:
        shutil.rmtree(workdir)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
