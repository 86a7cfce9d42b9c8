"""The metrics endpoint agrees with what stock clients did to a real broker process.

librdkafka counts the requests it sends (its statistics' per-broker ``req``); the producer's
delivery reports give the offsets; the broker's files give the bytes it stored. The scrape must
match each exactly: messages in, bytes in and out, Produce request count, log start/end offsets,
and a group's committed offset and lag after a kafka-python consumer commits. The request log
(on for this broker) must show the same Produce requests, one line each.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.brokers import free_ports
from compat_tests.kit.drivers.base import ConsumerSettings
from compat_tests.kit.drivers.confluent import ConfluentAdmin, ConfluentClient
from compat_tests.kit.drivers.kafka_python import KafkaPythonDriver
from compat_tests.kit.drivers.records import make_records
from tests.scrape import scrape

TOPIC = "metered"
RECORDS = 2000
PRODUCER_ID = "metered-producer"
DEADLINE_S = 60


@pytest.fixture
def metered_broker(tmp_path: Path) -> Iterator[tuple[OdradekProcess, int]]:
    (metrics_port,) = free_ports(1)
    overrides = {"metrics.listener": f"http://127.0.0.1:{metrics_port}", "log.requests.enable": "true"}
    broker = OdradekProcess(tmp_path / "broker", overrides).start()
    try:
        yield broker, metrics_port
    finally:
        broker.stop()


def produce_counting_requests(bootstrap: str) -> tuple[dict[int, int], int]:
    """Produce ``RECORDS`` records with librdkafka: (end offset per partition from the delivery
    reports, Produce requests librdkafka says it sent)."""
    stats: list[dict[str, Any]] = []
    flushed = False

    def on_stats(text: str) -> None:
        if flushed:
            stats.append(json.loads(text))

    ends: dict[int, int] = {}

    def on_delivery(error: Any, message: Any) -> None:
        assert error is None, error
        ends[message.partition()] = max(ends.get(message.partition(), 0), message.offset() + 1)

    # librdkafka's own statistics (stats_cb) count the requests: a stock Producer, not a driver.
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": PRODUCER_ID,
            "linger.ms": 5,
            "batch.num.messages": 100,  # several Produce requests per partition
            "statistics.interval.ms": 100,
            "stats_cb": on_stats,
        }
    )
    for record in make_records(RECORDS):
        producer.produce(TOPIC, value=record.value, key=record.key, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(DEADLINE_S) == 0
    flushed = True
    deadline = time.monotonic() + DEADLINE_S
    while not stats and time.monotonic() < deadline:  # the next report after the last Produce
        producer.poll(0.1)
    assert stats, "librdkafka sent no statistics"
    requests = sum(broker["req"].get("Produce", 0) for broker in stats[-1]["brokers"].values())
    return ends, requests


def stored_bytes(data_dir: Path, topic: str) -> int:
    """What the topic's segment files hold: batches exactly as producers sent them."""
    return sum(path.stat().st_size for path in data_dir.glob(f"{topic}-*/*.log"))


def test_scrape_agrees_with_the_clients(metered_broker: tuple[OdradekProcess, int]) -> None:
    broker, metrics_port = metered_broker
    ConfluentAdmin(broker.bootstrap).create_topic(TOPIC, 2)
    ends, produce_requests = produce_counting_requests(broker.bootstrap)
    assert sum(ends.values()) == RECORDS and produce_requests > 2

    metrics = scrape(metrics_port)
    stored = stored_bytes(broker.data_dir, TOPIC)
    assert metrics.value("kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC) == RECORDS
    assert metrics.value("kafka_server_brokertopicmetrics_bytesin_total", topic=TOPIC) == stored
    assert metrics.value("kafka_log_log_size", topic=TOPIC) == stored
    for name in ("requests_total", "totaltime_seconds_count"):
        assert metrics.value(f"kafka_network_requestmetrics_{name}", request="Produce") == produce_requests
    assert metrics.value("kafka_server_replicamanager_partitioncount") >= 2
    for partition in (0, 1):
        labels = {"topic": TOPIC, "partition": str(partition)}
        assert metrics.value("kafka_log_log_logendoffset", **labels) == ends.get(partition, 0)
        assert metrics.value("kafka_log_log_logstartoffset", **labels) == 0

    # one consumer reads everything once: every stored byte goes out once
    ConfluentClient(broker.bootstrap).consume(TOPIC, {0: 0, 1: 0}, until={0: ends[0], 1: ends[1]})
    assert scrape(metrics_port).value("kafka_server_brokertopicmetrics_bytesout_total", topic=TOPIC) == stored

    committed = ends[0] // 3
    with KafkaPythonDriver(broker.bootstrap).consumer(ConsumerSettings(group="metered-group")) as consumer:
        consumer.assign({(TOPIC, 0): 0})
        consumer.commit({(TOPIC, 0): committed})
    lag_labels = {"consumergroup": "metered-group", "topic": TOPIC, "partition": "0"}
    metrics = scrape(metrics_port)
    assert metrics.value("kafka_consumergroup_current_offset", **lag_labels) == committed
    assert metrics.value("kafka_consumergroup_lag", **lag_labels) == ends[0] - committed
    assert metrics.series("kafka_consumergroup_lag") == [lag_labels]

    logged = [
        json.loads(line.split("request: ", 1)[1])
        for line in broker.log_text().splitlines()
        if "odradek.requests: request: " in line
    ]
    assert len([line for line in logged if line["api"] == "Produce"]) == produce_requests
    assert {line["client_id"] for line in logged if line["api"] == "Produce"} == {PRODUCER_ID}


def test_deleting_a_topic_drops_its_series(metered_broker: tuple[OdradekProcess, int]) -> None:
    broker, metrics_port = metered_broker
    admin = ConfluentAdmin(broker.bootstrap)
    admin.create_topic(TOPIC, 1)
    ConfluentClient(broker.bootstrap).produce(TOPIC, make_records(10), partition=0)
    assert scrape(metrics_port).value("kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC) == 10
    admin.delete_topic(TOPIC)
    metrics = scrape(metrics_port)
    for name in ("kafka_server_brokertopicmetrics_messagesin_total", "kafka_log_log_size"):
        assert all(labels.get("topic") != TOPIC for labels in metrics.series(name))
