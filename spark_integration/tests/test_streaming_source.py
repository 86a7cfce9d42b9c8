"""Spark's Kafka source in Structured Streaming (``spark.readStream.format("kafka")``)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from spark_integration.tests.support import (
    delete_records,
    filled_topic,
    in_log_order,
    numbered_records,
    produce,
    run_available_now,
    written_records,
)

PICKUP_TIMEOUT_S = 60.0


def _stream(spark: SparkSession, bootstrap: str, **options: str) -> DataFrame:
    """A Kafka stream from the earliest offsets; ``options`` choose topics and limits."""
    settings = {"kafka.bootstrap.servers": bootstrap, "startingOffsets": "earliest", **options}
    return spark.readStream.format("kafka").options(**settings).load()


def test_available_now_restarted_from_checkpoint_processes_every_record_once(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic, first = filled_topic(new_topic, bootstrap, 30, partitions=2)
    run_available_now(_stream(spark, bootstrap, subscribe=topic), tmp_path)
    assert written_records(spark, tmp_path) == first

    second = produce(bootstrap, topic, numbered_records(20, partitions=2, first=30))
    query = run_available_now(_stream(spark, bootstrap, subscribe=topic), tmp_path)

    everything = in_log_order(first + second)
    assert written_records(spark, tmp_path) == everything
    assert sum(progress["numInputRows"] for progress in query.recentProgress) == len(second)


def test_max_offsets_per_trigger_caps_every_micro_batch(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic, produced = filled_topic(new_topic, bootstrap, 20, partitions=2)

    query = run_available_now(_stream(spark, bootstrap, subscribe=topic, maxOffsetsPerTrigger="5"), tmp_path)

    batch_sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert max(batch_sizes) <= 5
    assert len(batch_sizes) >= 4
    assert written_records(spark, tmp_path) == produced


def test_subscribe_pattern_picks_up_a_topic_created_while_running(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str]
) -> None:
    prefix = f"pattern-{uuid.uuid4().hex[:8]}"
    existing = new_topic(partitions=1, prefix=prefix)
    produce(bootstrap, existing, numbered_records(3, partitions=1))
    name = f"pattern_{uuid.uuid4().hex[:8]}"
    query = (
        _stream(spark, bootstrap, subscribePattern=f"{prefix}-.*")
        .selectExpr("topic", "CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName(name)
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        _wait_for_rows(spark, name, existing, 3)
        created = new_topic(partitions=2, prefix=prefix)
        produce(bootstrap, created, numbered_records(4, partitions=2))
        _wait_for_rows(spark, name, created, 4)
    finally:
        query.stop()


def _wait_for_rows(spark: SparkSession, table: str, topic: str, count: int) -> None:
    """Poll a memory-sink table until ``count`` rows of ``topic`` arrived (or fail)."""
    deadline = time.monotonic() + PICKUP_TIMEOUT_S
    seen = 0
    while time.monotonic() < deadline:
        seen = spark.table(table).where(f"topic = '{topic}'").count()
        if seen >= count:
            assert seen == count
            return
        time.sleep(0.5)
    pytest.fail(f"{seen} of {count} records of {topic} after {PICKUP_TIMEOUT_S:.0f}s")


def test_fail_on_data_loss_reports_deleted_records_and_false_skips_them(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    """Records deleted before the query read them are lost: fail loudly, or skip when allowed."""
    topic, read_before = filled_topic(new_topic, bootstrap, 5, partitions=1)
    run_available_now(_stream(spark, bootstrap, subscribe=topic), tmp_path)
    later = produce(bootstrap, topic, numbered_records(5, partitions=1, first=5))
    delete_records(bootstrap, topic, partition=0, before_offset=8)

    with pytest.raises(StreamingQueryException, match="Some data may have been lost"):
        run_available_now(_stream(spark, bootstrap, subscribe=topic, failOnDataLoss="true"), tmp_path)
    run_available_now(_stream(spark, bootstrap, subscribe=topic, failOnDataLoss="false"), tmp_path)

    surviving = [r for r in later if r.offset is not None and r.offset >= 8]
    assert written_records(spark, tmp_path) == read_before + surviving
