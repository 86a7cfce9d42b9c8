"""The CI run of the accepted-batch oracle (see :mod:`tests.fuzz.accepted_batches` for the long
mode): one round of batches against a real broker, read back by librdkafka, kafka-python and
the Java client.

A fixed seed keeps CI reproducible; ``ODRADEK_FUZZ_SEED`` picks another one, and the seed is in
every failure message, so any failure replays with
``python -m tests.fuzz.accepted_batches --seed S --batches N`` (``--batch I`` for one batch).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fuzz.accepted_batches import ROUND_BATCHES, run

SEED = int(os.environ.get("ODRADEK_FUZZ_SEED", "20261129"))


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_every_accepted_batch_is_read_back_by_every_client(tmp_path: Path) -> None:
    report = run(tmp_path, SEED, range(ROUND_BATCHES))
    summary = report.summary()
    print(summary)
    assert report.failed == 0, (
        f"replay: python -m tests.fuzz.accepted_batches --seed {SEED} --batches {ROUND_BATCHES}\n{summary}"
    )
    assert report.batches == ROUND_BATCHES, summary
    # Both sides of the promise must have been exercised, or the run proved nothing.
    assert report.accepted > ROUND_BATCHES // 2, summary
    assert sum(report.refused.values()) > ROUND_BATCHES // 10, summary
    assert all(count == report.records for count in report.reads.values()), summary
    assert len(report.reads) == 3, summary
