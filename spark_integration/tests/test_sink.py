"""Spark's Kafka sink (``df.write.format("kafka")``), checked with an independent consumer."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import SparkSession

from spark_integration.tests.support import consume_all

SINK_SCHEMA = "key BINARY, value BINARY, partition INT, headers ARRAY<STRUCT<key: STRING, value: BINARY>>"


def test_written_records_read_back_with_keys_partitions_and_headers(
    spark: SparkSession, bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=2)
    rows = [
        (f"key-{i}".encode(), f"value-{i}".encode(), i % 2, [("n", str(i).encode()), ("tag", None)])
        for i in range(10)
    ]
    frame = spark.createDataFrame(rows, SINK_SCHEMA)

    frame.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save()

    read_back = consume_all(bootstrap, topic, partitions=2)
    assert len(read_back) == len(rows)
    assert {(r.key, r.value, r.partition, r.headers) for r in read_back} == {
        (key, value, partition, tuple(headers)) for key, value, partition, headers in rows
    }
