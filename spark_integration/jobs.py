"""The pipeline's two Spark jobs, wired to Kafka through Spark's own connector.

- :func:`start_activity_stream`: Structured Streaming from the events topic to per-page,
  per-minute activity, written both to a results topic (Kafka sink) and to Parquet files.
- :func:`run_daily_report`: a batch read of the whole events topic into a daily report.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from spark_integration.transforms import as_kafka_records, daily_report, page_activity, parse_events

AVAILABLE_NOW: Mapping[str, object] = {"availableNow": True}
"""Process everything in the topic now, in as many micro-batches as the limits need, then stop."""


def read_topic(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    """The whole topic as it is now: every partition from its log start to its high watermark."""
    return (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )


def start_activity_stream(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    results_topic: str,
    work_dir: Path,
    trigger: Mapping[str, object] = AVAILABLE_NOW,
    max_offsets_per_trigger: int | None = None,
) -> list[StreamingQuery]:
    """Start the activity aggregation with two sinks and return both running queries.

    A streaming query has exactly one sink, so the results topic and the Parquet directory are
    two queries over the same definition, each with its own checkpoint under ``work_dir``; the
    checkpoint is what makes a restarted query resume where it stopped instead of re-reading.
    A new query starts at the earliest offsets so that no event published before it is missed.
    """
    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    if max_offsets_per_trigger is not None:
        source = source.option("maxOffsetsPerTrigger", max_offsets_per_trigger)
    activity = page_activity(parse_events(source.load()))
    to_kafka = (
        as_kafka_records(activity)
        .writeStream.format("kafka")
        .queryName(f"page-activity-to-kafka-{results_topic}")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", results_topic)
        .option("checkpointLocation", str(work_dir / "checkpoints" / "kafka"))
        .outputMode("append")
        .trigger(**trigger)
        .start()
    )
    to_parquet = (
        activity.writeStream.format("parquet")
        .queryName(f"page-activity-to-parquet-{results_topic}")
        .option("path", str(parquet_dir(work_dir)))
        .option("checkpointLocation", str(work_dir / "checkpoints" / "parquet"))
        .outputMode("append")
        .trigger(**trigger)
        .start()
    )
    return [to_kafka, to_parquet]


def await_all(queries: list[StreamingQuery]) -> None:
    """Wait until every query has terminated (raising the first failure), then stop them all.

    Stopping in ``finally`` matters: a query left running after a failure or Ctrl-C keeps
    consuming the broker and holds its checkpoint.
    """
    try:
        for query in queries:
            query.awaitTermination()
    finally:
        for query in queries:
            query.stop()


def parquet_dir(work_dir: Path) -> Path:
    """Where the streaming job writes its Parquet copy of the results."""
    return work_dir / "page_activity"


def run_daily_report(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    """The daily report over every event in ``topic``, computed by one batch job."""
    return daily_report(parse_events(read_topic(spark, bootstrap, topic)))
