"""``python -m bench.strict_encoding``: what refusing undeclared fields costs a response's encoding.

A strict encoder (``wire.codegen``) compares each struct's keys with the fields its struct
declares before writing it: one set comparison per struct, so a response's cost grows with its
partitions. This encodes Produce, Fetch and Metadata responses of the sizes a broker sends,
through the encoders with and without the check, interleaved in one run because this machine
is shared and noisy (CPU time of this process, the minimum over ``--rounds``), and prints
microseconds per response and their ratio. Encoding is measured as the broker does it
(``encode_parts``: record sets are passed through, not copied).
"""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

from bench.cpu_timing import cpu_seconds_per_call
from wire.api_keys import ApiKey
from wire.codegen import generate
from wire.schemas import ALL_APIS

_RECORDS = memoryview(bytes(64 * 1024))
_TOPIC_ID = bytes(range(16))


def _produce(topics: int, partitions: int) -> dict[str, Any]:
    return {
        "responses": [
            {
                "name": f"topic-{t}",
                "partition_responses": [
                    {
                        "index": p,
                        "error_code": 0,
                        "base_offset": 1_000_000 + p,
                        "log_append_time_ms": -1,
                        "log_start_offset": 0,
                    }
                    for p in range(partitions)
                ],
            }
            for t in range(topics)
        ],
        "throttle_time_ms": 0,
    }


def _fetch(topics: int, partitions: int, records: bool) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 7,
        "responses": [
            {
                "topic_id": _TOPIC_ID,
                "partitions": [
                    {
                        "partition_index": p,
                        "error_code": 0,
                        "high_watermark": 5_000_000,
                        "last_stable_offset": 5_000_000,
                        "log_start_offset": 0,
                        "aborted_transactions": None,
                        "preferred_read_replica": -1,
                        "records": _RECORDS if records else None,
                    }
                    for p in range(partitions)
                ],
            }
            for t in range(topics)
        ],
    }


def _metadata(brokers: int, topics: int, partitions: int) -> dict[str, Any]:
    nodes = list(range(brokers))
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": b, "host": f"broker-{b}", "port": 9092, "rack": None} for b in nodes],
        "cluster_id": "odradek-bench",
        "controller_id": 0,
        "topics": [
            {
                "error_code": 0,
                "name": f"topic-{t}",
                "topic_id": _TOPIC_ID,
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": p,
                        "leader_id": p % brokers,
                        "leader_epoch": 3,
                        "replica_nodes": nodes,
                        "isr_nodes": nodes,
                        "offline_replicas": [],
                    }
                    for p in range(partitions)
                ],
                "topic_authorized_operations": -2147483648,
            }
            for t in range(topics)
        ],
    }


# (label, API, version, response): the latest version each API declares, and the shapes a
# producer's acknowledgement, a consumer's fetch and a client's metadata refresh take.
CASES: list[tuple[str, ApiKey, int, dict[str, Any]]] = [
    ("Produce v13, 1 topic x 4 partitions", ApiKey.PRODUCE, 13, _produce(1, 4)),
    ("Produce v13, 10 topics x 100 partitions", ApiKey.PRODUCE, 13, _produce(10, 100)),
    ("Fetch v18, 1 topic x 4 partitions, records", ApiKey.FETCH, 18, _fetch(1, 4, True)),
    ("Fetch v18, 10 topics x 100 partitions, empty", ApiKey.FETCH, 18, _fetch(10, 100, False)),
    ("Metadata v13, 3 brokers, 1 topic x 4 partitions", ApiKey.METADATA, 13, _metadata(3, 1, 4)),
    ("Metadata v13, 3 brokers, 100 topics x 10 partitions", ApiKey.METADATA, 13, _metadata(3, 100, 10)),
]


def measure(rounds: int, budget_s: float) -> dict[str, tuple[float, float]]:
    """Case -> (lenient, strict) microseconds per response, best of ``rounds``."""
    best: dict[str, list[float]] = {label: [float("inf"), float("inf")] for label, *_ in CASES}
    encoders = {
        label: [generate(ALL_APIS[key], version, "response", strict=s).encode_parts for s in (False, True)]
        for label, key, version, _ in CASES
    }
    # As many encodings per timing as fit in ``budget_s``, so small and large responses are
    # timed over a similar span.
    repeats = {
        label: max(
            1, int(budget_s / max(cpu_seconds_per_call(partial(encoders[label][0], message), 3), 1e-7))
        )
        for label, _, _, message in CASES
    }
    for _ in range(rounds):
        for label, _, _, message in CASES:
            for column, encode in enumerate(encoders[label]):
                best[label][column] = min(
                    best[label][column], cpu_seconds_per_call(partial(encode, message), repeats[label]) * 1e6
                )
    return {label: (lenient, strict) for label, (lenient, strict) in best.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.strict_encoding", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--budget", type=float, default=0.05, help="seconds per timing (default 0.05)")
    args = parser.parse_args(argv)
    print(f"{'response':52} {'lenient':>9} {'strict':>9} {'ratio':>6}  (us per response)")
    for label, (lenient, strict) in measure(args.rounds, args.budget).items():
        print(f"{label:52} {lenient:9.2f} {strict:9.2f} {strict / lenient:6.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
