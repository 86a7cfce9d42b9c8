"""The latency bench measures what it says, against a real Odradek (short, so CI stays fast)."""

from __future__ import annotations

from bench.ack_latency import measure
from bench.launchers import OdradekLauncher, running


def test_every_timed_message_is_acknowledged_and_consumed() -> None:
    with running(OdradekLauncher(["log.flush.interval.messages=1"])) as broker:
        result = measure(broker, rate=200, seconds=1, partitions=2, warmup=0.5)
    assert result["messages"] == 200
    for figures in (result["ack"], result["e2e"]):
        assert 0 < figures["p50_ms"] <= figures["p99_ms"] <= figures["max_ms"]
    assert result["broker_cores"] > 0 and result["cpu_ms_per_record"] > 0
    assert (result["brokers"], result["replication_factor"]) == (1, 1)
