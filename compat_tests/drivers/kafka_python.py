"""kafka-python driver.

kafka-python derives a "broker version" from the ApiVersions ranges a broker advertises and
gates features on it (record format, idempotence, admin APIs), so it catches dishonest
ApiVersions answers that other clients tolerate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, codec
from kafka import TopicPartition as KpPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, OffsetSpec

from compat_tests.drivers import kafka_python_api
from compat_tests.drivers.base import (
    NO_OFFSET,
    OP_TIMEOUT_S,
    ClientError,
    Consumer,
    ConsumerSettings,
    Driver,
    ErrorKind,
    GroupDescription,
    Message,
    ProducerSettings,
    Received,
    TopicPartition,
    client_errors,
    kafka_state_name,
)
from compat_tests.drivers.kafka_python_api import TIMEOUT_MS


def subscribe_with_metadata(consumer: KafkaConsumer, topics: Sequence[str]) -> None:
    """Subscribe, then load the topics' metadata before the first ``poll`` joins the group.

    kafka-python 3.0.x loses a rebalance that only its leader's metadata snapshot asked for:
    when a leader assigned from metadata that lacked a topic, the topic's arrival makes it
    rejoin, and if ``poll`` returns before that JoinGroup/SyncGroup finishes, the next ``poll``
    sees nothing left to rejoin for and never applies the answer. The member stops
    heartbeating and the coordinator expels it after the session timeout, on any broker.
    The Java client fetches the subscribed topics' metadata before its first JoinGroup; doing
    the same here (the metadata listener then snapshots the new subscription) keeps the
    leader's first assignment complete, so that rejoin never happens.
    """
    consumer.subscribe(list(topics))
    consumer.topics()  # a metadata round trip, whatever the cache holds


class KafkaPythonConsumer(Consumer):
    """A KafkaConsumer; ``group_id=None`` gives a group-less consumer, as in Java."""

    def __init__(self, driver: KafkaPythonDriver, settings: ConsumerSettings) -> None:
        super().__init__(driver)
        with client_errors():
            self._consumer = KafkaConsumer(**kafka_python_api.consumer_config(driver.bootstrap, settings))

    def assign(self, positions: Mapping[TopicPartition, int | None]) -> None:
        with client_errors():
            kafka_python_api.assign(self._consumer, KpPartition, positions)

    def subscribe(self, topics: Sequence[str]) -> None:
        with client_errors():
            subscribe_with_metadata(self._consumer, topics)

    def poll(self, max_records: int, timeout_s: float) -> list[Received]:
        with client_errors():
            batches = self._consumer.poll(timeout_ms=int(timeout_s * 1000), max_records=max_records)
        return kafka_python_api.received(batches)

    def assignment(self) -> set[TopicPartition]:
        with client_errors():
            return {(tp.topic, tp.partition) for tp in self._consumer.assignment()}

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        with client_errors():
            self._consumer.commit(
                {KpPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
            )

    def close(self) -> None:
        self._consumer.close()


class KafkaPythonDriver(Driver):
    """Drives kafka-python's KafkaProducer, KafkaConsumer and KafkaAdminClient."""

    name = "kafka-python"

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self._admin_client: KafkaAdminClient | None = None

    @property
    def _admin(self) -> KafkaAdminClient:
        """Created on first use: the admin client connects eagerly and not every scenario needs it."""
        if self._admin_client is None:
            with client_errors():
                self._admin_client = KafkaAdminClient(
                    bootstrap_servers=self.bootstrap, request_timeout_ms=TIMEOUT_MS
                )
        return self._admin_client

    def produce(self, topic: str, messages: Sequence[Message], settings: ProducerSettings) -> list[int]:
        if settings.compression != "none" and not getattr(codec, f"has_{settings.compression}")():
            self.unsupported(
                f"{settings.compression} compression (its optional codec library is not installed)"
            )
        config = kafka_python_api.producer_config(self.bootstrap, settings)
        config["max_block_ms"] = int(settings.timeout_s * 1000)
        config["request_timeout_ms"] = TIMEOUT_MS
        if settings.retries is not None:
            config["retries"] = settings.retries
        with client_errors():
            producer = KafkaProducer(**config)
            try:
                futures = [producer.send(topic, **kafka_python_api.send_arguments(m)) for m in messages]
                producer.flush(timeout=OP_TIMEOUT_S)
                offsets = [f.get(timeout=OP_TIMEOUT_S).offset for f in futures]
            finally:
                producer.close(timeout=5)
        return [o if o >= 0 else NO_OFFSET for o in offsets]

    def open_consumer(self, settings: ConsumerSettings) -> Consumer:
        return KafkaPythonConsumer(self, settings)

    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        wire_spec = {"earliest": OffsetSpec.EARLIEST, "latest": OffsetSpec.LATEST}.get(str(spec), spec)
        with client_errors():
            result = self._admin.list_partition_offsets(
                {KpPartition(topic, p): wire_spec for p in partitions}
            )
        return {tp.partition: r.offset for tp, r in result.items()}

    def list_topics(self) -> set[str]:
        with client_errors():
            return set(self._admin.list_topics())

    def partition_count(self, topic: str) -> int:
        with client_errors():
            (description,) = self._admin.describe_topics([topic])
        if description["error_code"]:
            raise ClientError(ErrorKind.UNKNOWN_TOPIC, f"describe_topics: {description}")
        return len(description["partitions"])

    def create_topic(self, topic: str, partitions: int, configs: Mapping[str, str] | None = None) -> None:
        with client_errors():
            self._admin.create_topics(
                {
                    topic: {
                        "num_partitions": partitions,
                        "replication_factor": 1,
                        "configs": dict(configs or {}),
                    }
                },
                timeout_ms=TIMEOUT_MS,
            )

    def delete_topic(self, topic: str) -> None:
        with client_errors():
            self._admin.delete_topics([topic], timeout_ms=TIMEOUT_MS)

    def create_partitions(self, topic: str, total: int) -> None:
        with client_errors():
            self._admin.create_partitions({topic: total}, timeout_ms=TIMEOUT_MS)

    def describe_configs(self, topic: str) -> dict[str, str]:
        with client_errors():
            result = self._admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"
            )
        return {key: data["value"] for key, data in result["topic"][topic].items()}

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        with client_errors():
            self._admin.delete_records({KpPartition(topic, partition): before_offset}, timeout_ms=TIMEOUT_MS)

    def alter_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        with client_errors():
            self._admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, dict(configs))])

    def describe_group(self, group: str) -> GroupDescription:
        with client_errors():
            description = self._admin.describe_groups([group])[group]
        members = [
            frozenset(
                (assigned["topic"], p)
                for assigned in m["member_assignment"]["assigned_partitions"]
                for p in assigned["partitions"]
            )
            for m in description["members"]
        ]
        return GroupDescription(kafka_state_name(description["group_state"]), members)

    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        with client_errors():
            result = self._admin.list_group_offsets({group: None})[group]
        return {(tp.topic, tp.partition): meta.offset for tp, meta in result.items()}

    def close(self) -> None:
        if self._admin_client is not None:
            self._admin_client.close()
