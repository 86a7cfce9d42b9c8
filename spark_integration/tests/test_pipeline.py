"""The website-activity pipeline end to end: its results equal the plain-Python reference."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from spark_integration import reference
from spark_integration.events import generate_events
from spark_integration.jobs import (
    await_all,
    parquet_dir,
    read_topic,
    run_daily_report,
    start_activity_stream,
)
from spark_integration.publish import publish_events
from spark_integration.reference import ActivityRow

START_MS = 1_714_607_820_000
"""2024-05-01T23:57:00Z: six minutes of events cross midnight, so the report has two days."""

EVENTS = list(generate_events(360, seed=11, start_ms=START_MS))
FIRST_RUN = 200


def _kafka_results(spark: SparkSession, bootstrap: str, topic: str) -> list[ActivityRow]:
    values = [json.loads(row["value"]) for row in read_topic(spark, bootstrap, topic).collect()]
    return sorted(
        (v["window_start"], v["window_end"], v["page"], v["events"], v["distinct_users"]) for v in values
    )


def _parquet_results(spark: SparkSession, work_dir: Path) -> list[ActivityRow]:
    return sorted(tuple(row) for row in spark.read.parquet(str(parquet_dir(work_dir))).collect())


def test_streaming_page_activity_equals_reference_across_a_restart(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    events_topic = new_topic(prefix="website-activity")
    results_topic = new_topic(prefix="page-activity")

    def run_and_check(published: int) -> None:
        await_all(start_activity_stream(spark, bootstrap, events_topic, results_topic, tmp_path))
        expected = reference.finalised_page_activity(EVENTS[:published])
        assert expected, "the events should finalise some windows"
        assert _kafka_results(spark, bootstrap, results_topic) == expected
        assert _parquet_results(spark, tmp_path) == expected

    publish_events(bootstrap, events_topic, EVENTS[:FIRST_RUN])
    run_and_check(FIRST_RUN)
    publish_events(bootstrap, events_topic, EVENTS[FIRST_RUN:])
    run_and_check(len(EVENTS))


def test_daily_report_equals_reference(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(prefix="website-activity")
    publish_events(bootstrap, topic, EVENTS)

    report = [tuple(row) for row in run_daily_report(spark, bootstrap, topic).collect()]

    assert report == reference.daily_report(EVENTS)
    assert len({day for day, *_ in report}) == 2
