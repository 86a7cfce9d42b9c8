"""The pipeline's DataFrame logic, separate from where the data comes from or goes to.

The same functions serve the streaming job (a ``readStream`` of the topic) and the batch report
(a ``read`` of the whole topic), so both interpret events identically.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

EVENT_SCHEMA = StructType(
    [
        StructField("user_id", StringType()),
        StructField("page", StringType()),
        StructField("action", StringType()),
        StructField("timestamp", LongType()),
    ]
)

WINDOW_SECONDS = 60
WATERMARK_DELAY_SECONDS = 120
ALL_PAGES = "(all pages)"
ISO_SECONDS = "yyyy-MM-dd'T'HH:mm:ss'Z'"


def parse_events(records: DataFrame) -> DataFrame:
    """Turn Kafka records (``value`` as JSON) into typed events with an ``event_time`` column.

    Records that are not events (not JSON, or without a user, page or time) are dropped rather than
    failing the query: one bad producer must not stop the pipeline.
    """
    event = F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("event")
    return (
        records.select(event)
        .select("event.*")
        .where(F.col("user_id").isNotNull() & F.col("page").isNotNull() & F.col("timestamp").isNotNull())
        .withColumn("event_time", F.timestamp_millis("timestamp"))
    )


def _distinct_users() -> Column:
    """Exact distinct users of a group.

    ``count(DISTINCT ...)`` is not allowed in streaming aggregations and ``approx_count_distinct``
    is an estimate; a set per (window, page) is small and gives the exact number in both modes.
    """
    return F.size(F.collect_set("user_id")).alias("distinct_users")


def page_activity(events: DataFrame) -> DataFrame:
    """Per page and 1-minute event-time window: event count and distinct users.

    The watermark lets Spark finalise a window once the newest event time seen is
    ``WATERMARK_DELAY_SECONDS`` past the window's end, emit it exactly once (append mode) and
    drop its state. Events older than the watermark are dropped as late.
    """
    windowed = (
        events.withWatermark("event_time", f"{WATERMARK_DELAY_SECONDS} seconds")
        .groupBy(F.window("event_time", f"{WINDOW_SECONDS} seconds"), "page")
        .agg(F.count(F.lit(1)).alias("events"), _distinct_users())
    )
    return windowed.select(
        F.date_format("window.start", ISO_SECONDS).alias("window_start"),
        F.date_format("window.end", ISO_SECONDS).alias("window_end"),
        "page",
        "events",
        "distinct_users",
    )


def as_kafka_records(activity: DataFrame) -> DataFrame:
    """Shape ``page_activity`` rows for the Kafka sink: key ``page@window_start``, JSON value.

    The key makes a window's result addressable (and compactable) per page.
    """
    return activity.select(
        F.concat_ws("@", "page", "window_start").alias("key"),
        F.to_json(F.struct(*activity.columns)).alias("value"),
    )


def daily_report(events: DataFrame) -> DataFrame:
    """Per UTC day: events and distinct users per page, plus an all-pages line per day."""
    dated = events.withColumn("day", F.to_date("event_time"))
    report = (
        dated.rollup("day", "page")
        .agg(F.count(F.lit(1)).alias("events"), F.count_distinct("user_id").alias("distinct_users"))
        .where(F.col("day").isNotNull())
    )
    return report.select(
        F.date_format("day", "yyyy-MM-dd").alias("day"),
        F.coalesce("page", F.lit(ALL_PAGES)).alias("page"),
        "events",
        "distinct_users",
    ).orderBy("day", "page")
