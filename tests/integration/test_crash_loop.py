"""kill -9 at random points of a produce load, again and again: nothing acknowledged is ever lost.

The single-kill scenario of ``test_crash_recovery`` in a loop, with small segments so that kills
also land around segment rolls and checkpoints.  Each round the producer keeps running while the
broker is killed and restarted, so records acknowledged before the kill, failed by it, and
acknowledged after the restart all occur.  After every restart, every record acknowledged so
far must be readable exactly once, at its acknowledged offset, with offsets contiguous from 0.
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

import pytest

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient
from tests.integration.test_crash_recovery import (
    PARTITIONS,
    TOPIC,
    check_everything_acknowledged,
    produce_until_killed,
)

ROUNDS = int(os.environ.get("ODRADEK_CRASH_ROUNDS", "5"))


@pytest.mark.slow
def test_repeated_kills_during_produce(tmp_path: Path) -> None:
    seed = int(os.environ.get("ODRADEK_CRASH_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    broker = OdradekProcess(
        tmp_path / "broker",
        {"log.segment.bytes": "16384", "log.flush.offset.checkpoint.interval.ms": "300"},
    ).start()
    try:
        with RawClient(broker.bootstrap) as client:
            client.create_topic(TOPIC, PARTITIONS)
        acknowledged: dict[tuple[int, int], bytes] = {}
        for round_number in range(ROUNDS):
            acked: dict[tuple[int, int], bytes] = {}
            stop = threading.Event()
            worker = threading.Thread(target=produce_until_killed, args=(broker.bootstrap, acked, stop))
            worker.start()
            target = rng.randint(100, 5000)
            deadline = time.monotonic() + 30
            while len(acked) < target and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(rng.random() * 0.3)
            broker.kill()
            broker.start()  # the producer reconnects and delivers what it still holds
            stop.set()
            worker.join(60)
            assert not worker.is_alive()
            assert acked, f"round {round_number} (seed {seed}): nothing was acknowledged"
            acknowledged.update(acked)
            check_everything_acknowledged(broker.bootstrap, acknowledged)
    finally:
        broker.stop()
