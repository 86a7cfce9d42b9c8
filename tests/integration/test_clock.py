"""One wall clock for the whole broker: what ``Broker(config, clock)`` is given is what append
times and the partition logs read."""

from __future__ import annotations

from pathlib import Path

import trio

from compat_tests.kit.in_process import running_broker
from compat_tests.kit.raw_protocol import RawClient, in_thread, make_batch
from wire.error_codes import ErrorCode

FIXED_MS = 978_307_200_000  # 2001-01-01, far from the machine's own clock


async def test_append_times_and_logs_follow_the_injected_clock(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_broker(tmp_path, clock=lambda: FIXED_MS) as (broker, port):

            def produce(client: RawClient) -> dict:
                client.create_topic("stamped", 1, {"message.timestamp.type": "LogAppendTime"})
                return client.produce("stamped", 0, make_batch([b"v"]), acks=1)

            answer = await in_thread(port, produce)
            assert answer["error_code"] == ErrorCode.NONE
            assert answer["log_append_time_ms"] == FIXED_MS
            partition_log = broker.partitions.get("stamped", 0)
            assert partition_log is not None and partition_log.clock() == FIXED_MS
