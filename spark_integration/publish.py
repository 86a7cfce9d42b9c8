"""Create topics and publish events with a stock client (confluent-kafka).

Publishing goes through librdkafka rather than Spark on purpose: the pipeline's input then comes
from a different client implementation than the one that reads it, as it would in production.
"""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from spark_integration.events import Event

ADMIN_TIMEOUT_S = 30.0


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create ``topic`` with ``partitions`` partitions unless it already exists."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=ADMIN_TIMEOUT_S)[topic]
    try:
        future.result(ADMIN_TIMEOUT_S)
    except KafkaException as exc:
        if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise


def publish_events(bootstrap: str, topic: str, events: Iterable[Event]) -> int:
    """Produce ``events`` (key = user, timestamp = event time) and wait until all are acknowledged.

    Returns how many were published; raises if any delivery failed, because a silently missing
    event would make every downstream count wrong.
    """
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    failures: list[str] = []

    def on_delivery(error: object, _message: object) -> None:
        if error is not None:
            failures.append(str(error))

    count = 0
    for event in events:
        producer.produce(
            topic, key=event.key(), value=event.value(), timestamp=event.timestamp, on_delivery=on_delivery
        )
        producer.poll(0)
        count += 1
    remaining = producer.flush(ADMIN_TIMEOUT_S)
    if remaining or failures:
        raise RuntimeError(f"{remaining} events unacknowledged, {len(failures)} failed: {failures[:3]}")
    return count
