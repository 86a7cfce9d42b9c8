"""``python -m bench.record_validation``: what validating a produced batch costs, per MB.

``wire.record_validation`` walks every record of every produced batch (aiokafka's Cython
reader) and, for batches with nulls, places each null's length byte (see its docstring). This
prints CPU milliseconds per MB of records for batches of about 1 MB, each shape next to the
walk the validation made before it checked null lengths (the reader, each record's offset, the
offsets compared with the expected run), interleaved in one run because this machine is shared
and noisy (CPU time of this process, the minimum over ``--rounds``).
"""

from __future__ import annotations

import argparse
from functools import partial
from operator import attrgetter

from aiokafka.record.default_records import DefaultRecordBatch

from bench.cpu_timing import cpu_seconds_per_call
from wire.record_batch import HEADER_SIZE, BatchInfo, Record, encode_batch, scan_batches
from wire.record_validation import validate_records

_MB = 1 << 20
_BASE_TS = 1_700_000_000_000


def _records(
    size: int, *, keyed: bool, headers: bool = False, tombstones: bool = False, span_ms: int = 20
) -> list[Record]:
    """About 1 MB of ``size``-byte records: keyed or keyless, with a header or a null value
    (every 100th record) where asked; their timestamps spread over ``span_ms``, as a producer
    filling a batch within its linger time writes them."""
    extra = (("trace", b"0123456789abcdef"),) if headers else ()
    count = _MB // size
    return [
        Record(
            i,
            _BASE_TS + i * span_ms // count,
            b"key-%08d" % i if keyed else None,
            None if tombstones and i % 100 == 99 else bytes(size - 16),
            extra,
        )
        for i in range(count)
    ]


SHAPES = {
    "1 KiB, keyed": _records(1024, keyed=True),
    "1 KiB, null keys": _records(1024, keyed=False),
    "1 KiB, keyed, one header": _records(1024, keyed=True, headers=True),
    "1 KiB, keyed, 1% null values": _records(1024, keyed=True, tombstones=True),
    "1 KiB, null keys, over 1 s": _records(1024, keyed=False, span_ms=1000),
    "100 B, keyed": _records(100, keyed=True),
    "100 B, null keys": _records(100, keyed=False),
    "100 B, null keys, over 1 s": _records(100, keyed=False, span_ms=1000),
    "10-2000 B, null keys": [
        Record(i, _BASE_TS + i // 50, None, bytes(10 + i * 7919 % 1990)) for i in range(_MB // 1000)
    ],
}

_offset_of = attrgetter("offset")


def reader_walk(batch: memoryview, _info: BatchInfo) -> None:
    """The walk as the validation made it before it checked null lengths: the reader, each
    record's offset, and the offsets compared with the expected run."""
    offsets = list(map(_offset_of, DefaultRecordBatch(batch)))
    if offsets != list(range(len(offsets))):
        raise AssertionError("the benchmark's batches have incremental offsets")


def validation(batch: memoryview, info: BatchInfo) -> None:
    validate_records(batch, info, batch[HEADER_SIZE:])


def measure(rounds: int, repeat: int) -> dict[str, tuple[float, float]]:
    """Shape -> (reader walk, validation), ms per MB of records, best of ``rounds``."""
    batches = {name: memoryview(bytes(encode_batch(records))) for name, records in SHAPES.items()}
    best = {name: [float("inf"), float("inf")] for name in batches}
    # the header and CRC checks come before validation, and are not measured
    infos = {name: scan_batches(batch)[0] for name, batch in batches.items()}
    for _ in range(rounds):
        for name, batch in batches.items():
            per_mb = 1e3 * _MB / (len(batch) - HEADER_SIZE)
            for column, check in enumerate((reader_walk, validation)):
                best[name][column] = min(
                    best[name][column],
                    cpu_seconds_per_call(partial(check, batch, infos[name]), repeat) * per_mb,
                )
    return {name: (walk, checked) for name, (walk, checked) in best.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.record_validation", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=10, help="validations per timing")
    args = parser.parse_args(argv)
    print(f"{'batch of ~1 MB':32} {'reader walk':>12} {'validation':>12} {'ratio':>6}  (ms per MB)")
    for name, (walk, checked) in measure(args.rounds, args.repeat).items():
        print(f"{name:32} {walk:12.3f} {checked:12.3f} {checked / walk:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
