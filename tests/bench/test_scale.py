"""The scale bench, run tiny against Odradek: every step happens and its figures add up."""

from __future__ import annotations

import pytest

from bench.launchers import OdradekLauncher
from bench.load import each_partition
from bench.scale import end_offsets, measure, parse_args, table


def test_end_offsets_follow_the_round_robin_of_the_load() -> None:
    targets = each_partition("a,b", 2)
    assert targets == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert end_offsets(targets, 7) == [2, 2, 2, 1]


def test_partitions_must_split_evenly_over_topics() -> None:
    with pytest.raises(SystemExit):
        parse_args(["--topics", "3", "--partitions", "10"])


def test_a_tiny_run_measures_every_step() -> None:
    args = parse_args(["--topics", "3", "--partitions", "12", "--consumers", "2", "--connections", "40",
                       "--megabytes", "0.2", "--idle-seconds", "0.5", "--phase-timeout", "120"])  # fmt: skip
    result = measure(OdradekLauncher(), args, lambda _line: None)
    assert result.produce is not None and result.consume is not None
    assert result.produce.bytes == result.consume.bytes == 195 * 1024  # 0.2 MB of 1 KiB values
    # Every producer connection was still open when the descriptors were counted.
    assert result.steps["connections"].descriptors >= 40 + result.steps["started"].descriptors
    assert result.peak_rss_mb >= max(step.rss_mb for step in result.steps.values())
    lines = table([result]).splitlines()
    assert len(lines) == 1 + 20 and lines[0].split() == ["odradek"]
