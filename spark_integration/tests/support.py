"""Helpers shared by the Spark tests: produce and inspect records with a stock client.

Test data is produced with confluent-kafka (librdkafka) and, where it matters, read back with it
too, so that what Spark reads or writes is checked against an independent client: through the
same drivers as the integration tests and the compatibility suite (:mod:`compat_tests.kit.drivers`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from compat_tests.kit.drivers.base import Message
from compat_tests.kit.drivers.confluent import ConfluentAdmin, ConfluentClient, ConfluentDriver
from compat_tests.kit.drivers.records import Record as DriverRecord

TIMEOUT_S = 30.0
BASE_TIME_MS = (int(time.time()) - 3600) * 1000
"""Record timestamps start an hour ago, fixed for the run so timestamp lookups are deterministic.

Not a constant date: a broker deletes records older than ``retention.ms`` (seven days by default)
at its next retention check, which made a fixed 2024 date fail against Apache Kafka.
"""

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class Record:
    """A Kafka record as a test sees it; ``offset`` is None until the broker assigned one."""

    partition: int
    key: bytes | None
    value: bytes
    timestamp: int
    headers: Headers = ()
    offset: int | None = None


def in_log_order(records: Iterable[Record]) -> list[Record]:
    """``records`` sorted by (partition, offset), the order every comparison in the tests uses."""
    return sorted(records, key=lambda r: (r.partition, r.offset))


def numbered_records(count: int, partitions: int, first: int = 0) -> list[Record]:
    """Records ``first``..``first+count-1``, round-robin over partitions, one second apart."""
    return [
        Record(
            partition=index % partitions,
            key=f"key-{index}".encode(),
            value=f"value-{index}".encode(),
            timestamp=BASE_TIME_MS + index * 1000,
        )
        for index in range(first, first + count)
    ]


def produce(bootstrap: str, topic: str, records: Iterable[Record]) -> list[Record]:
    """Produce ``records`` to their partitions in order; return them with their offsets."""
    client = ConfluentClient(bootstrap)
    by_partition: dict[int, list[Record]] = {}
    for record in records:
        by_partition.setdefault(record.partition, []).append(record)
    acknowledged = []
    for partition, batch in by_partition.items():
        sent = [DriverRecord(r.key, r.value, r.headers, r.timestamp) for r in batch]
        delivered = client.produce(topic, sent, partition=partition, timeout_s=TIMEOUT_S)
        acknowledged += [replace(r, offset=d.offset) for r, d in zip(batch, delivered, strict=True)]
    return in_log_order(acknowledged)


def filled_topic(
    new_topic: Callable[..., str], bootstrap: str, count: int, partitions: int
) -> tuple[str, list[Record]]:
    """A new topic of ``partitions`` partitions holding :func:`numbered_records` ``0..count-1``;
    returns its name and the records with their offsets."""
    topic = new_topic(partitions=partitions)
    return topic, produce(bootstrap, topic, numbered_records(count, partitions=partitions))


def produce_transactions(
    bootstrap: str, topic: str, transactions: Iterable[tuple[list[Record], bool]]
) -> None:
    """Produce each list of records as one transaction of a transactional producer, then commit
    it (True) or abort it (False)."""
    with ConfluentDriver(bootstrap).transactional_producer(f"spark-{topic}") as producer:
        for records, commit in transactions:
            producer.begin()
            # A send flushes: an abort drops what is still queued, and these must be written.
            producer.send(
                topic, [Message(r.value, r.key, r.headers, r.partition, r.timestamp) for r in records]
            )
            (producer.commit if commit else producer.abort)()


def consume_all(bootstrap: str, topic: str, partitions: int) -> list[Record]:
    """Every record of ``topic`` up to its current high watermarks, without a consumer group."""
    client = ConfluentClient(bootstrap)
    ends = client.list_offsets(topic, range(partitions), "latest")
    consumed = client.consume(
        topic, dict.fromkeys(range(partitions), 0), until=ends, timeout_s=TIMEOUT_S, reset="earliest"
    )
    return in_log_order(
        Record(c.partition, c.record.key, c.record.value, c.record.timestamp_ms, c.record.headers, c.offset)
        for records in consumed.values()
        for c in records
    )


def delete_records(bootstrap: str, topic: str, partition: int, before_offset: int) -> None:
    """Move the partition's log start offset to ``before_offset`` (the DeleteRecords API)."""
    with ConfluentAdmin(bootstrap) as admin:
        assert admin.delete_records(topic, {partition: before_offset}) == {partition: before_offset}


def spark_records(frame: DataFrame) -> list[Record]:
    """The rows of a Kafka source DataFrame as :class:`Record` s, in (partition, offset) order."""
    columns = ["partition", "offset", "key", "value", "unix_millis(timestamp) AS timestamp"]
    has_headers = "headers" in frame.columns
    rows = frame.selectExpr(*columns, *(["headers"] if has_headers else [])).collect()
    records = [
        Record(
            partition=row["partition"],
            key=None if row["key"] is None else bytes(row["key"]),
            value=bytes(row["value"]),
            timestamp=row["timestamp"],
            headers=tuple(
                (h["key"], None if h["value"] is None else bytes(h["value"])) for h in row["headers"] or ()
            )
            if has_headers
            else (),
            offset=row["offset"],
        )
        for row in rows
    ]
    return in_log_order(records)


def run_available_now(stream: DataFrame, work_dir: Path) -> StreamingQuery:
    """Run ``stream`` to a Parquet sink with trigger(availableNow) and wait until it is done.

    Parquet with a checkpoint is Spark's exactly-once file sink: a restarted query neither
    loses nor repeats a micro-batch, so the files show what the source really delivered.
    Raises ``StreamingQueryException`` if the query failed.
    """
    query = (
        stream.writeStream.format("parquet")
        .option("path", str(_sink_dir(work_dir)))
        .option("checkpointLocation", str(work_dir / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
    finally:
        query.stop()
    return query


def written_records(spark: SparkSession, work_dir: Path) -> list[Record]:
    """Everything the :func:`run_available_now` runs over ``work_dir`` have written so far."""
    return spark_records(spark.read.parquet(str(_sink_dir(work_dir))))


def _sink_dir(work_dir: Path) -> Path:
    return work_dir / "out"
