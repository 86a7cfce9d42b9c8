"""The throughput bench runs a real trial end to end and accounts for the CPU it reports."""

from __future__ import annotations

from pathlib import Path

from bench.launchers import OdradekLauncher, tls_security
from bench.throughput import Settings, run_trial


def test_a_small_trial_moves_every_byte_and_counts_the_writeback() -> None:
    settings = Settings(messages=2000, value_size=1024, partitions=2, phase_timeout_s=60)
    trial = run_trial(OdradekLauncher(["log.flush.interval.messages=1"]), settings)
    assert trial.produce.bytes == trial.consume.bytes == 2000 * 1024
    # Until the page cache is clean the machine did at least the broker's work (the client's
    # own CPU is left out of both), so the to-disk figure cannot be below the broker's; /proc
    # counts in 10 ms ticks per core, hence the slack.
    assert trial.produce.settled_cpu_seconds >= trial.produce.broker_cpu_seconds - 0.05


def test_a_tls_trial_produces_and_consumes_over_the_tls_listener(tmp_path: Path) -> None:
    """Both phases run over an SSL listener: the broker serves no plaintext listener at all, so
    every byte counted went through TLS (and the consume path's pread-and-encrypt code)."""
    security = tls_security(tmp_path)
    launcher = OdradekLauncher(security=security)
    assert launcher.name == "odradek+tls"
    assert launcher.command(9, tmp_path)[4:6] == ["--listeners", "SSL://127.0.0.1:9"]
    settings = Settings(messages=3000, value_size=1024, partitions=2, phase_timeout_s=60)
    trial = run_trial(launcher, settings)
    assert trial.produce.bytes == trial.consume.bytes == 3000 * 1024


def test_the_raw_client_moves_every_record_through_each_leader_of_several_processes() -> None:
    """``bench.raw_load`` against ``serve --processes 2``: the partitions' leaders are two
    processes, and 2,500 records over 3 partitions leave each a remainder below a full batch,
    so its pre-built requests come in two shapes. The consumer counts records from the fetched
    batch headers: a record the producer did not deliver would be missing there."""
    settings = Settings(
        messages=2500, value_size=1024, partitions=3, phase_timeout_s=60, client="bench.raw_load"
    )
    trial = run_trial(OdradekLauncher(processes=2), settings)
    assert trial.produce.bytes == trial.consume.bytes == 2500 * 1024
    assert len(trial.node_peak_rss_bytes) == 2  # both processes were measured
