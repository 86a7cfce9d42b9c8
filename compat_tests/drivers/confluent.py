"""confluent-kafka (librdkafka) driver; it also serves as the suite's setup client.

librdkafka is the most widely deployed non-Java client, and its AdminClient is complete and fast,
so scenarios create their topics through it whichever client they test.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, Producer, TopicCollection, libversion
from confluent_kafka import Message as RdMessage
from confluent_kafka import TopicPartition as RdPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from compat_tests.drivers.base import (
    GROUP_PROTOCOLS,
    NO_OFFSET,
    OP_TIMEOUT_S,
    ClientError,
    Consumer,
    ConsumerSettings,
    Driver,
    GroupDescription,
    Message,
    ProducerSettings,
    Received,
    TopicPartition,
    classify,
    client_errors,
    kafka_state_name,
)

RESET = {"earliest": "earliest", "latest": "latest", "none": "error"}
"""librdkafka spells Kafka's auto.offset.reset=none as 'error'."""
KIP_848_LIBRDKAFKA = 0x020C0000
"""librdkafka 2.12, where group.protocol=consumer became generally available (earlier: early access)."""


def _raise_for(error: KafkaError) -> None:
    text = f"{error.name()}: {error.str()}"
    raise ClientError(classify(text), text)


def _received(msg: RdMessage) -> Received:
    _, timestamp = msg.timestamp()
    return Received(
        topic=msg.topic(),
        partition=msg.partition(),
        offset=msg.offset(),
        key=msg.key(),
        value=msg.value(),
        headers=tuple((k, v or b"") for k, v in msg.headers() or ()),
        timestamp_ms=timestamp,
    )


class ConfluentConsumer(Consumer):
    """A librdkafka KafkaConsumer; without a group it gets a throwaway group id (librdkafka wants one)."""

    def __init__(self, driver: ConfluentDriver, settings: ConsumerSettings) -> None:
        super().__init__(driver)
        config: dict[str, Any] = {
            **driver.common,
            "group.id": settings.group or f"compat-assign-{uuid.uuid4().hex}",
            "auto.offset.reset": RESET[settings.reset],
            "enable.auto.commit": False,
            "group.protocol": settings.group_protocol,
        }
        if settings.group_protocol == "classic":
            # With the consumer protocol the broker owns the session timeout, and librdkafka
            # refuses to create a consumer that sets it.
            config["session.timeout.ms"] = 10000
        with client_errors():
            self._consumer = RdConsumer(config)

    def assign(self, positions: Mapping[TopicPartition, int | None]) -> None:
        with client_errors():
            self._consumer.assign(
                [
                    RdPartition(t, p) if offset is None else RdPartition(t, p, offset)
                    for (t, p), offset in positions.items()
                ]
            )

    def subscribe(self, topics: Sequence[str]) -> None:
        with client_errors():
            self._consumer.subscribe(list(topics))

    def poll(self, max_records: int, timeout_s: float) -> list[Received]:
        with client_errors():
            messages = self._consumer.consume(num_messages=max_records, timeout=timeout_s)
        for msg in messages:
            if msg.error() is not None:
                _raise_for(msg.error())
        return [_received(m) for m in messages]

    def assignment(self) -> set[TopicPartition]:
        with client_errors():
            return {(tp.topic, tp.partition) for tp in self._consumer.assignment()}

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        with client_errors():
            self._consumer.commit(
                offsets=[RdPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False
            )

    def close(self) -> None:
        self._consumer.close()


class ConfluentDriver(Driver):
    """Drives confluent-kafka's Producer, Consumer and AdminClient."""

    name = "confluent-kafka"
    group_protocols = frozenset(GROUP_PROTOCOLS if libversion()[1] >= KIP_848_LIBRDKAFKA else {"classic"})
    group_protocol_gap = f"librdkafka {libversion()[0]} predates KIP-848 (generally available from 2.12)"

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self.common: dict[str, Any] = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000}
        self._admin = AdminClient(self.common)

    @staticmethod
    def _wait(futures: Mapping[Any, Future[Any]] | Sequence[Future[Any]]) -> list[Any]:
        """Resolve admin futures in order, raising the first failure as a ClientError."""
        values = futures.values() if isinstance(futures, Mapping) else futures
        with client_errors():
            return [f.result(timeout=OP_TIMEOUT_S) for f in values]

    def produce(self, topic: str, messages: Sequence[Message], settings: ProducerSettings) -> list[int]:
        config: dict[str, Any] = {
            **self.common,
            "compression.type": settings.compression,
            "acks": settings.acks,
            "message.timeout.ms": int(settings.timeout_s * 1000),
            "linger.ms": 5,
        }
        if settings.idempotence is not None:
            config["enable.idempotence"] = settings.idempotence
        if settings.max_request_size is not None:
            config["message.max.bytes"] = settings.max_request_size
        if settings.retries is not None:
            config["retries"] = settings.retries
        reports: list[tuple[KafkaError | None, RdMessage] | None] = [None] * len(messages)

        def on_delivery(index: int) -> Any:
            return lambda err, msg: reports.__setitem__(index, (err, msg))

        with client_errors():
            producer = Producer(config)
            for index, m in enumerate(messages):
                producer.produce(
                    topic,
                    value=m.value,
                    key=m.key,
                    partition=-1 if m.partition is None else m.partition,
                    timestamp=m.timestamp_ms or 0,
                    headers=list(m.headers),
                    on_delivery=on_delivery(index),
                )
                producer.poll(0)
            remaining = producer.flush(OP_TIMEOUT_S + 5)
        if remaining:
            raise ClientError(classify("timed out"), f"{remaining} messages undelivered after flush")
        offsets = []
        for report in reports:
            assert report is not None
            err, msg = report
            if err is not None:
                _raise_for(err)
            offset = msg.offset()  # None with acks=0
            offsets.append(offset if offset is not None and offset >= 0 else NO_OFFSET)
        return offsets

    def open_consumer(self, settings: ConsumerSettings) -> Consumer:
        return ConfluentConsumer(self, settings)

    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        if spec == "earliest":
            offset_spec = OffsetSpec.earliest()
        elif spec == "latest":
            offset_spec = OffsetSpec.latest()
        else:
            offset_spec = OffsetSpec.for_timestamp(int(spec))
        futures = self._admin.list_offsets({RdPartition(topic, p): offset_spec for p in partitions})
        results = self._wait({tp: f for tp, f in futures.items()})
        return {tp.partition: r.offset for tp, r in zip(futures, results, strict=True)}

    def list_topics(self) -> set[str]:
        with client_errors():
            return set(self._admin.list_topics(timeout=OP_TIMEOUT_S).topics)

    def partition_count(self, topic: str) -> int:
        futures = self._admin.describe_topics(TopicCollection([topic]))
        (description,) = self._wait(futures)
        return len(description.partitions)

    def create_topic(self, topic: str, partitions: int, configs: Mapping[str, str] | None = None) -> None:
        new = NewTopic(topic, num_partitions=partitions, replication_factor=1, config=dict(configs or {}))
        self._wait(self._admin.create_topics([new], operation_timeout=OP_TIMEOUT_S))

    def delete_topic(self, topic: str) -> None:
        self._wait(self._admin.delete_topics([topic], operation_timeout=OP_TIMEOUT_S))

    def create_partitions(self, topic: str, total: int) -> None:
        self._wait(self._admin.create_partitions([NewPartitions(topic, total)]))

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        self._wait(self._admin.delete_records([RdPartition(topic, partition, before_offset)]))

    def describe_configs(self, topic: str) -> dict[str, str]:
        (entries,) = self._wait(self._admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]))
        return {name: entry.value for name, entry in entries.items()}

    def alter_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()]
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
        self._wait(self._admin.incremental_alter_configs([resource]))

    def describe_group(self, group: str) -> GroupDescription:
        (description,) = self._wait(self._admin.describe_consumer_groups([group]))
        members = [
            frozenset((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
            for m in description.members
        ]
        return GroupDescription(kafka_state_name(description.state.name), members)

    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        (result,) = self._wait(self._admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]))
        return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}
