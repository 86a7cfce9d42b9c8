"""The bounded CI run of the live fuzzer (see :mod:`tests.fuzz.live_fuzzer` for the long mode).

A fixed seed keeps CI reproducible; ``ODRADEK_FUZZ_SEED`` picks another one (a nightly job or
a developer can vary it), and the seed is in every failure message, so any failure replays
with ``python -m tests.fuzz.live_fuzzer --seed S --frames N``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fuzz.live_fuzzer import run

CI_CASES = 25_000
SEED = int(os.environ.get("ODRADEK_FUZZ_SEED", "20261123"))


# CPU-bound (25,000 cases): 150 s beside the other suites on the 2-core CI machine; the deadline
# is for a hang (each case has its own, CASE_DEADLINE_S), not for speed.
@pytest.mark.timeout(480)
@pytest.mark.slow
def test_hostile_frames_cannot_take_the_broker_down_or_disturb_a_neighbour(tmp_path: Path) -> None:
    report = run(tmp_path / "broker", SEED, range(CI_CASES))
    summary = report.summary()
    print(summary)
    assert report.cases == CI_CASES, summary
    assert report.problems() == [], (
        f"replay: python -m tests.fuzz.live_fuzzer --seed {SEED} --frames {CI_CASES}\n{summary}"
    )
    # The run must have exercised both ends of the contract, or it proved nothing.
    assert report.outcomes["answered"] > CI_CASES // 10, summary
    assert report.outcomes["closed"] > CI_CASES // 10, summary
