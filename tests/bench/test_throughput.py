"""The throughput bench runs a real trial end to end and accounts for the CPU it reports."""

from __future__ import annotations

from bench.launchers import OdradekLauncher
from bench.throughput import Settings, run_trial


def test_a_small_trial_moves_every_byte_and_counts_the_writeback() -> None:
    settings = Settings(messages=2000, value_size=1024, partitions=2, phase_timeout_s=60)
    trial = run_trial(OdradekLauncher(["log.flush.interval.messages=1"]), settings)
    assert trial.produce.bytes == trial.consume.bytes == 2000 * 1024
    # Until the page cache is clean the machine did at least the broker's work (the client's
    # own CPU is left out of both), so the to-disk figure cannot be below the broker's; /proc
    # counts in 10 ms ticks per core, hence the slack.
    assert trial.produce.settled_cpu_seconds >= trial.produce.broker_cpu_seconds - 0.05
