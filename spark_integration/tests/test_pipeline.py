"""The website-activity pipeline end to end: its results equal the plain-Python reference."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_integration import reference
from spark_integration.events import Event, generate_events
from spark_integration.jobs import await_all, parquet_dir, read_topic, run_daily_report, start_activity_stream
from spark_integration.publish import publish_events
from spark_integration.reference import ActivityRow

DAY_MS = 86_400_000
FIRST_RUN = 200


@pytest.fixture(scope="module")
def events() -> list[Event]:
    """360 events, one a second, from 3 minutes before the latest UTC midnight at least 10 minutes ago.

    Crossing midnight gives the daily report two days; staying in the past and within a day or
    two keeps the records clear of the broker's time-based retention and future-time checks.
    """
    midnight = (int(time.time() * 1000) - 10 * 60_000) // DAY_MS * DAY_MS
    return list(generate_events(360, seed=11, start_ms=midnight - 3 * 60_000))


def _kafka_results(spark: SparkSession, bootstrap: str, topic: str) -> list[ActivityRow]:
    values = [json.loads(row["value"]) for row in read_topic(spark, bootstrap, topic).collect()]
    return sorted(
        (v["window_start"], v["window_end"], v["page"], v["events"], v["distinct_users"]) for v in values
    )


def _parquet_results(spark: SparkSession, work_dir: Path) -> list[ActivityRow]:
    return sorted(tuple(row) for row in spark.read.parquet(str(parquet_dir(work_dir))).collect())


def test_streaming_page_activity_equals_reference_across_a_restart(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str], tmp_path: Path, events: list[Event]
) -> None:
    events_topic = new_topic(prefix="website-activity")
    results_topic = new_topic(prefix="page-activity")

    def run_and_check(published: int) -> None:
        await_all(start_activity_stream(spark, bootstrap, events_topic, results_topic, tmp_path))
        expected = reference.finalised_page_activity(events[:published])
        assert expected, "the events should finalise some windows"
        assert _kafka_results(spark, bootstrap, results_topic) == expected
        assert _parquet_results(spark, tmp_path) == expected

    publish_events(bootstrap, events_topic, events[:FIRST_RUN])
    run_and_check(FIRST_RUN)
    publish_events(bootstrap, events_topic, events[FIRST_RUN:])
    run_and_check(len(events))


def test_daily_report_equals_reference(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str], events: list[Event]
) -> None:
    topic = new_topic(prefix="website-activity")
    publish_events(bootstrap, topic, events)

    report = [tuple(row) for row in run_daily_report(spark, bootstrap, topic).collect()]

    assert report == reference.daily_report(events)
    assert len({day for day, *_ in report}) == 2
