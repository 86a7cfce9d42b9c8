"""Spark's Kafka source in batch mode (``spark.read.format("kafka")``)."""

from __future__ import annotations

import json
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from spark_integration.jobs import read_topic
from spark_integration.tests.support import (
    BASE_TIME_MS,
    Record,
    filled_topic,
    numbered_records,
    produce,
    produce_transactions,
    spark_records,
)


def _batch(spark: SparkSession, bootstrap: str, topic: str, **options: str) -> DataFrame:
    """A batch read of ``topic``: the connector's defaults (earliest to latest) unless ``options``."""
    settings = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, **options}
    return spark.read.format("kafka").options(**settings).load()


def test_earliest_to_latest_returns_exactly_the_produced_records(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic, produced = filled_topic(new_topic, bootstrap, 30, partitions=2)

    frame = read_topic(spark, bootstrap, topic)

    assert spark_records(frame) == produced
    assert {row["topic"] for row in frame.select("topic").collect()} == {topic}


def test_offsets_by_timestamp_select_the_time_range(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str]
) -> None:
    """Starting is the first offset at or after the time; ending is exclusive, the same lookup."""
    topic, produced = filled_topic(new_topic, bootstrap, 20, partitions=2)
    start, end = BASE_TIME_MS + 5_000, BASE_TIME_MS + 15_000

    frame = _batch(
        spark,
        bootstrap,
        topic,
        startingOffsetsByTimestamp=json.dumps({topic: {"0": start, "1": start}}),
        endingOffsetsByTimestamp=json.dumps({topic: {"0": end, "1": end}}),
    )

    assert spark_records(frame) == [r for r in produced if start <= r.timestamp < end]


def test_min_partitions_splits_offset_ranges_without_changing_the_data(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic, produced = filled_topic(new_topic, bootstrap, 40, partitions=2)

    frame = _batch(spark, bootstrap, topic, minPartitions="6")

    assert frame.rdd.getNumPartitions() >= 6
    assert spark_records(frame) == produced


def test_include_headers_returns_headers_in_order_with_duplicates_and_nulls(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=1)
    headers = (("trace", b"abc"), ("dup", b"1"), ("dup", b"2"), ("empty", None))
    produced = produce(
        bootstrap,
        topic,
        [
            Record(partition=0, key=b"with", value=b"headers", timestamp=BASE_TIME_MS, headers=headers),
            Record(partition=0, key=None, value=b"without", timestamp=BASE_TIME_MS + 1),
        ],
    )

    frame = _batch(spark, bootstrap, topic, includeHeaders="true")

    assert spark_records(frame) == produced


def test_read_committed_sees_only_committed_transactions(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str]
) -> None:
    """``kafka.isolation.level=read_committed``: records of an aborted transaction are skipped
    (the broker's aborted-transaction list), the markers' offsets are gaps Spark steps over."""
    topic = new_topic(partitions=1)
    first, aborted, last = (
        numbered_records(3, 1),
        numbered_records(2, 1, first=3),
        numbered_records(2, 1, first=5),
    )
    produce_transactions(bootstrap, topic, [(first, True), (aborted, False), (last, True)])

    committed = _batch(spark, bootstrap, topic, **{"kafka.isolation.level": "read_committed"})
    everything = _batch(spark, bootstrap, topic)

    assert [r.value for r in spark_records(committed)] == [r.value for r in first + last]
    assert [r.value for r in spark_records(everything)] == [r.value for r in first + aborted + last]
