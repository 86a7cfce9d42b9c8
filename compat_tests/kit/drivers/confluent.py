"""confluent-kafka (librdkafka): its compatibility driver, bulk client and admin client.

librdkafka is the most widely deployed non-Java client, and its AdminClient is complete and fast,
so scenarios create their topics through it whichever client they test. Its failures become
:class:`~compat_tests.kit.drivers.base.ClientError` with Kafka's name for the error code.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import closing, contextmanager
from typing import Any

from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    libversion,
)
from confluent_kafka import Message as RdMessage
from confluent_kafka import TopicPartition as RdPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
)

from compat_tests.kit.drivers import base
from compat_tests.kit.drivers.admin import (
    Acl,
    Admin,
    AdminDriver,
    BrokerInfo,
    ConfigValue,
    Replicas,
    TopicInfo,
)
from compat_tests.kit.drivers.base import OP_TIMEOUT_S, Message, Received, TopicPartition, client_failure
from compat_tests.kit.drivers.bulk import BulkClient, Fetch, Send
from compat_tests.kit.drivers.records import Consumed, Delivered, Record

NAME = "confluent-kafka"
RESET = {"earliest": "earliest", "latest": "latest", "none": "error"}
"""librdkafka spells Kafka's auto.offset.reset=none as 'error'."""
KIP_848_LIBRDKAFKA = 0x020C0000
"""librdkafka 2.12, where group.protocol=consumer became generally available (earlier: early access)."""


def _failure(error: KafkaError) -> base.ClientError:
    """A librdkafka error: Kafka's name for a broker error code, librdkafka's own name otherwise."""
    code = error.code()
    name = base.kafka_error_name(code) if code >= 0 else error.name()
    return client_failure(NAME, name, f"{error.name()}: {error.str()}")


@contextmanager
def _errors() -> Iterator[None]:
    """Every failure of a librdkafka call as a :class:`ClientError`."""
    with base.client_errors():
        try:
            yield
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if isinstance(error, KafkaError):
                raise _failure(error) from exc
            raise


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


def _delivered(
    reports: list[Delivered | KafkaError | None], index: int, error: KafkaError | None, message: RdMessage
) -> None:
    reports[index] = error if error is not None else Delivered(message.partition(), message.offset())


def _record(message: RdMessage) -> Record:
    return Record(message.key(), message.value(), tuple(message.headers() or ()), message.timestamp()[1])


def _outcomes(producer: Producer, topic: str, messages: Sequence[Message]) -> list[int | base.ClientError]:
    """Produce ``messages`` in order, flush, and return each one's offset or failure."""
    reports: list[tuple[KafkaError | None, RdMessage] | None] = [None] * len(messages)

    def on_delivery(index: int) -> Any:
        return lambda err, msg: reports.__setitem__(index, (err, msg))

    with _errors():
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
        producer.flush(OP_TIMEOUT_S + 5)
    outcomes: list[int | base.ClientError] = []
    for report in reports:
        if report is None:
            outcomes.append(client_failure(NAME, "TIMEOUT", "undelivered after flush"))
            continue
        err, msg = report
        if err is not None:
            outcomes.append(_failure(err))
            continue
        offset = msg.offset()  # None with acks=0
        outcomes.append(offset if offset is not None and offset >= 0 else base.NO_OFFSET)
    return outcomes


class ConfluentProducer(base.Producer):
    """A librdkafka producer; each send flushes, so nothing is left queued between sends."""

    def __init__(self, driver: ConfluentDriver, settings: base.ProducerSettings) -> None:
        super().__init__(driver)
        config: dict[str, Any] = {
            **driver.common,
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
        with _errors():
            self._producer = Producer(config)

    def deliver(self, topic: str, messages: Sequence[Message]) -> list[int | base.ClientError]:
        return _outcomes(self._producer, topic, messages)

    def close(self) -> None:
        """Close the producer (nothing is left to flush: every send flushed).

        Closing a producer that hit a fatal error (a fenced one's _FENCED) raises that error once
        more; the call that hit it has already reported it to the scenario, so it is no failure
        of closing.
        """
        try:
            self._producer.close()
        except KafkaException as exc:
            if not (exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].fatal()):
                raise


class ConfluentTransactionalProducer(ConfluentProducer, base.TransactionalProducer):
    """A librdkafka producer with ``transactional.id``; every transactional call waits at most
    :data:`OP_TIMEOUT_S`, after which librdkafka reports a retriable timeout."""

    def __init__(self, driver: ConfluentDriver, transactional_id: str, timeout_ms: int) -> None:
        base.TransactionalProducer.__init__(self, driver)
        self._common = driver.common
        config = {
            **driver.common,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": timeout_ms,
            "linger.ms": 5,
        }
        with _errors():
            self._producer = Producer(config)
            self._producer.init_transactions(OP_TIMEOUT_S)

    def begin(self) -> None:
        with _errors():
            self._producer.begin_transaction()

    def send_offsets(self, offsets: Mapping[TopicPartition, int], group: str) -> None:
        """confluent-kafka builds group metadata only from a consumer of the group, so a consumer
        that never joins lends it: the group id with no generation, as Java's
        ``new ConsumerGroupMetadata(group)``."""
        with _errors():
            with closing(RdConsumer({**self._common, "group.id": group, "enable.auto.commit": False})) as c:
                metadata = c.consumer_group_metadata()
            positions = [RdPartition(t, p, o) for (t, p), o in offsets.items()]
            self._producer.send_offsets_to_transaction(positions, metadata, OP_TIMEOUT_S)

    def commit(self) -> None:
        with _errors():
            self._producer.commit_transaction(OP_TIMEOUT_S)

    def abort(self) -> None:
        with _errors():
            self._producer.abort_transaction(OP_TIMEOUT_S)


class ConfluentConsumer(base.Consumer):
    """A librdkafka KafkaConsumer; without a group it gets a throwaway group id (librdkafka wants one)."""

    def __init__(self, driver: ConfluentDriver, settings: base.ConsumerSettings) -> None:
        super().__init__(driver)
        config: dict[str, Any] = {
            **driver.common,
            "group.id": settings.group or f"compat-assign-{uuid.uuid4().hex}",
            "auto.offset.reset": RESET[settings.reset],
            "enable.auto.commit": settings.auto_commit_ms is not None,
            "group.protocol": settings.group_protocol,
            "isolation.level": settings.isolation,
        }
        if settings.group_protocol == "classic":
            # With the consumer protocol the broker owns the session timeout, and librdkafka
            # refuses to create a consumer that sets it.
            config["session.timeout.ms"] = settings.session_timeout_ms or base.CLASSIC_SESSION_TIMEOUT_MS
        optional = {
            "client.id": settings.client_id,
            "partition.assignment.strategy": settings.assignor,
            "auto.commit.interval.ms": settings.auto_commit_ms,
        }
        config |= {key: value for key, value in optional.items() if value is not None}
        with _errors():
            self._consumer = RdConsumer(config)

    def assign(self, positions: Mapping[TopicPartition, int | None]) -> None:
        with _errors():
            self._consumer.assign(
                [
                    RdPartition(t, p) if offset is None else RdPartition(t, p, offset)
                    for (t, p), offset in positions.items()
                ]
            )

    def subscribe(self, topics: Sequence[str]) -> None:
        with _errors():
            self._consumer.subscribe(list(topics))

    def poll(self, max_records: int, timeout_s: float) -> list[Received]:
        with _errors():
            messages = self._consumer.consume(num_messages=max_records, timeout=timeout_s)
        for msg in messages:
            if msg.error() is not None:
                raise _failure(msg.error())
        return [_received(m) for m in messages]

    def assignment(self) -> set[TopicPartition]:
        with _errors():
            return {(tp.topic, tp.partition) for tp in self._consumer.assignment()}

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        with _errors():
            self._consumer.commit(
                offsets=[RdPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False
            )

    def close(self) -> None:
        self._consumer.close()


class ConfluentClient(BulkClient):
    """librdkafka through confluent-kafka: the most widely deployed non-Java client."""

    name = NAME

    def _produce(self, send: Send) -> list[Delivered]:
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "acks": send.acks,
            "enable.idempotence": send.idempotent,
            "compression.type": send.codec,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "batch.num.messages": 100_000,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "message.timeout.ms": int(send.timeout_s * 1000),
            "topic.metadata.propagation.max.ms": 2000,
        }
        if send.codec == "gzip":
            config["compression.level"] = 1  # level 6 doubles the test's time for no extra coverage
        producer = Producer(config)
        reports: list[Delivered | KafkaError | None] = [None] * len(send.records)
        target = -1 if send.partition is None else send.partition
        with _errors():
            for index, r in enumerate(send.records):
                producer.produce(
                    send.topic,
                    value=r.value,
                    key=r.key,
                    partition=target,
                    timestamp=r.timestamp_ms,
                    headers=list(r.headers) or None,
                    on_delivery=functools.partial(_delivered, reports, index),
                )
                if index % 20_000 == 0:
                    producer.poll(0)
            left = producer.flush(send.timeout_s + 5)
        if left:
            raise client_failure(self.name, "TIMEOUT", f"{left} messages undelivered after {send.timeout_s}s")
        delivered: list[Delivered] = []
        for report in reports:
            if not isinstance(report, Delivered):
                assert report is not None, "flush returned but a delivery report is missing"
                raise _failure(report)
            delivered.append(report)
        return delivered

    def _consumer(self, reset: str, fetch_bytes: int | None) -> RdConsumer:
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            # librdkafka insists on a group id even for assign(); nothing is committed to it.
            "group.id": f"it-assign-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": {"none": "error"}.get(reset, reset),
            "fetch.wait.max.ms": 100,
            "queued.max.messages.kbytes": 262_144,
            "socket.timeout.ms": 20_000,
        }
        if fetch_bytes is not None:
            config["max.partition.fetch.bytes"] = fetch_bytes
            config["fetch.max.bytes"] = fetch_bytes
            # librdkafka requires fetch.max.bytes >= message.max.bytes (whose minimum is 1000).
            config["message.max.bytes"] = max(1000, min(fetch_bytes, 1_000_000))
        else:
            config["max.partition.fetch.bytes"] = 16_777_216
        return RdConsumer(config)

    def _fetch(self, fetch: Fetch) -> None:
        with _errors(), closing(self._consumer(fetch.reset, fetch.fetch_bytes)) as consumer:
            consumer.assign([RdPartition(fetch.topic, p, o) for p, o in fetch.positions.items()])
            for wait in fetch.polls():
                for message in consumer.consume(num_messages=50_000, timeout=wait):
                    error = message.error()
                    if error is not None:
                        raise _failure(error)
                    fetch.received[message.partition()].append(
                        Consumed(message.partition(), message.offset(), _record(message))
                    )

    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        """Earliest/latest by ``get_watermark_offsets`` (a ListOffsets each), timestamps by
        ``offsets_for_times``; librdkafka reports "no such offset" as -1 (OFFSET_END)."""
        with _errors(), closing(self._consumer("earliest", None)) as consumer:
            if isinstance(spec, int):
                found = consumer.offsets_for_times(
                    [RdPartition(topic, p, spec) for p in partitions],
                    timeout=OP_TIMEOUT_S,
                )
                for tp in found:
                    if tp.error is not None:
                        raise _failure(tp.error)
                return {tp.partition: tp.offset for tp in found}
            result: dict[int, int] = {}
            for p in partitions:
                low, high = consumer.get_watermark_offsets(
                    RdPartition(topic, p), timeout=OP_TIMEOUT_S, cached=False
                )
                result[p] = low if spec == "earliest" else high
            return result


_RESOURCE_NAMES = {"CLUSTER": "BROKER"}
"""librdkafka calls Kafka's CLUSTER resource type BROKER (the same code, 4)."""


def _neutral_acl(binding: AclBinding) -> Acl:
    """The neutral ACL for librdkafka's AclBinding."""
    kind = {v: k for k, v in _RESOURCE_NAMES.items()}.get(binding.restype.name, binding.restype.name)
    return Acl(
        kind,
        binding.name,
        binding.principal,
        binding.operation.name,
        binding.permission_type.name,
        binding.resource_pattern_type.name,
        binding.host,
    )


def _rd_acl(acl: Acl, kind: type[AclBinding] | type[AclBindingFilter]) -> Any:
    """librdkafka's AclBinding (or AclBindingFilter) for a neutral ACL."""
    return kind(
        ResourceType[_RESOURCE_NAMES.get(acl.resource_type, acl.resource_type)],
        acl.name,
        ResourcePatternType[acl.pattern],
        acl.principal,
        acl.host,
        AclOperation[acl.operation],
        AclPermissionType[acl.permission],
    )


class ConfluentAdmin(Admin):
    """confluent-kafka's AdminClient (librdkafka)."""

    name = NAME

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000})

    @staticmethod
    def _wait(futures: Mapping[Any, Future[Any]] | Sequence[Future[Any]]) -> list[Any]:
        """Resolve admin futures in order, raising the first failure."""
        values = futures.values() if isinstance(futures, Mapping) else futures
        with _errors():
            return [f.result(timeout=OP_TIMEOUT_S) for f in values]

    def _create_topic(
        self, topic: str, partitions: int, replicas: Replicas, configs: dict[str, str], validate_only: bool
    ) -> None:
        if isinstance(replicas, int):
            new = NewTopic(topic, partitions, replicas, config=configs)
        else:
            new = NewTopic(topic, partitions, replica_assignment=replicas, config=configs)
        self._wait(
            self.admin.create_topics([new], operation_timeout=OP_TIMEOUT_S, validate_only=validate_only)
        )

    def delete_topic(self, topic: str) -> None:
        self._wait(self.admin.delete_topics([topic], operation_timeout=OP_TIMEOUT_S))

    def create_partitions(
        self, topic: str, total: int, assignments: Sequence[Sequence[int]] | None = None
    ) -> None:
        manual = {} if assignments is None else {"replica_assignment": [list(r) for r in assignments]}
        new = NewPartitions(topic, total, **manual)
        self._wait(self.admin.create_partitions([new], operation_timeout=OP_TIMEOUT_S))

    def describe_topic(self, topic: str) -> TopicInfo:
        with _errors():
            (description,) = self.admin.describe_topics(TopicCollection([topic])).values()
            result = description.result(timeout=OP_TIMEOUT_S)
        return TopicInfo(len(result.partitions), str(result.topic_id))

    def list_topics(self) -> set[str]:
        with _errors():
            return set(self.admin.list_topics(timeout=OP_TIMEOUT_S).topics)

    def configs(self, resource_type: str, name: str) -> dict[str, ConfigValue]:
        resource = ConfigResource(ResourceType[resource_type], name)
        (entries,) = self._wait(self.admin.describe_configs([resource]))
        return {
            key: ConfigValue(entry.value, ConfigSource(entry.source).name, entry.is_read_only)
            for key, entry in entries.items()
        }

    def alter_configs(
        self, resource_type: str, name: str, configs: Mapping[str, str | None], *, incremental: bool
    ) -> None:
        kind = ResourceType[resource_type]
        op = AlterConfigOpType
        if incremental:
            entries = [
                ConfigEntry(k, v, incremental_operation=op.SET if v is not None else op.DELETE)
                for k, v in configs.items()
            ]
            resource = ConfigResource(kind, name, incremental_configs=entries)
            self._wait(self.admin.incremental_alter_configs([resource]))
        else:
            resource = ConfigResource(kind, name, set_config=dict(configs))
            self._wait(self.admin.alter_configs([resource]))

    def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        tps = [RdPartition(topic, p, o) for p, o in before.items()]
        futures = self.admin.delete_records(tps, operation_timeout=OP_TIMEOUT_S)
        results = self._wait(futures)
        return {tp.partition: r.low_watermark for tp, r in zip(futures, results, strict=True)}

    def brokers(self) -> list[BrokerInfo]:
        with _errors():
            result = self.admin.describe_cluster(request_timeout=OP_TIMEOUT_S).result(timeout=OP_TIMEOUT_S)
        return [BrokerInfo(n.id, n.host, n.port) for n in result.nodes]

    def list_offsets(
        self, topic: str, partitions: Sequence[int], spec: str | int
    ) -> dict[int, tuple[int, int]]:
        offset_spec = OffsetSpec
        wire = (
            offset_spec.for_timestamp(spec)
            if isinstance(spec, int)
            else {
                "earliest": offset_spec.earliest(),
                "latest": offset_spec.latest(),
                "max_timestamp": offset_spec.max_timestamp(),
            }[spec]
        )
        futures = self.admin.list_offsets(
            {RdPartition(topic, p): wire for p in partitions},
            request_timeout=OP_TIMEOUT_S,
        )
        results = self._wait(futures)
        return {tp.partition: (r.offset, r.timestamp) for tp, r in zip(futures, results, strict=True)}

    def describe_group(self, group: str) -> base.GroupDescription:
        (description,) = self._wait(self.admin.describe_consumer_groups([group]))
        members = [
            frozenset((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
            for m in description.members
        ]
        return base.GroupDescription(
            base.kafka_state_name(description.state.name),
            members,
            description.partition_assignor,
            [(m.client_id, m.host) for m in description.members],
        )

    def list_groups(self, states: Sequence[str] = ()) -> dict[str, base.GroupListing]:
        """librdkafka lists consumer groups only, as Java's listConsumerGroups."""
        by_name = {base.kafka_state_name(state.name): state for state in ConsumerGroupState}
        with _errors():
            future = self.admin.list_consumer_groups(
                states={by_name[s] for s in states}, request_timeout=OP_TIMEOUT_S
            )
            listed = future.result(timeout=OP_TIMEOUT_S)
            if listed.errors:  # a broker that could not list its groups
                raise listed.errors[0]
        return {
            g.group_id: base.GroupListing(
                base.kafka_state_name(g.state.name), g.is_simple_consumer_group, g.type.name.lower()
            )
            for g in listed.valid
        }

    def delete_group(self, group: str) -> None:
        self._wait(self.admin.delete_consumer_groups([group], request_timeout=OP_TIMEOUT_S))

    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        (result,) = self._wait(self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]))
        return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}

    def alter_group_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        positions = [RdPartition(t, p, o) for (t, p), o in offsets.items()]
        (result,) = self._wait(
            self.admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, positions)])
        )
        for tp in result.topic_partitions:
            if tp.error is not None:
                raise _failure(tp.error)

    def create_acls(self, acls: Sequence[Acl]) -> list[str | None]:
        futures = self.admin.create_acls(
            [_rd_acl(acl, AclBinding) for acl in acls], request_timeout=OP_TIMEOUT_S
        )
        outcomes: list[str | None] = []
        for future in futures.values():
            try:
                self._wait([future])
            except base.ClientError as exc:
                outcomes.append(exc.error)
            else:
                outcomes.append(None)
        return outcomes

    def describe_acls(self, acl_filter: Acl) -> set[Acl]:
        future = self.admin.describe_acls(_rd_acl(acl_filter, AclBindingFilter), request_timeout=OP_TIMEOUT_S)
        return {_neutral_acl(binding) for binding in self._wait([future])[0]}

    def delete_acls(self, filters: Sequence[Acl]) -> list[set[Acl]]:
        futures = self.admin.delete_acls(
            [_rd_acl(f, AclBindingFilter) for f in filters], request_timeout=OP_TIMEOUT_S
        )
        return [{_neutral_acl(binding) for binding in deleted} for deleted in self._wait(futures)]

    def authorized_operations(self, resource_type: str, name: str) -> set[str]:
        if resource_type == "TOPIC":
            futures = self.admin.describe_topics(TopicCollection([name]), include_authorized_operations=True)
        elif resource_type == "GROUP":
            futures = self.admin.describe_consumer_groups([name], include_authorized_operations=True)
        else:
            futures = [self.admin.describe_cluster(include_authorized_operations=True)]
        (described,) = self._wait(futures)
        return {op.name for op in described.authorized_operations or ()}

    def close(self) -> None:
        """librdkafka's AdminClient has no close: its handle goes with the last reference."""

    def metadata_allowing_creation(self, topic: str) -> TopicInfo:
        """librdkafka producers request Metadata with allow_auto_topic_creation=true."""
        producer = Producer({"bootstrap.servers": self.bootstrap})
        with _errors():
            metadata = producer.list_topics(topic, timeout=OP_TIMEOUT_S).topics[topic]
        if metadata.error is not None:
            raise _failure(metadata.error)
        return TopicInfo(len(metadata.partitions), "")


class ConfluentDriver(AdminDriver):
    """Drives confluent-kafka's Producer, Consumer and AdminClient."""

    name = NAME
    consumer_class = ConfluentConsumer
    consumer_options = frozenset(base.OPTIONAL_CONSUMER_SETTINGS)
    producer_class = ConfluentProducer
    transactional_producer_class = ConfluentTransactionalProducer
    admin_class = ConfluentAdmin
    group_protocols = frozenset(
        base.GROUP_PROTOCOLS if libversion()[1] >= KIP_848_LIBRDKAFKA else {"classic"}
    )
    group_protocol_gap = f"librdkafka {libversion()[0]} predates KIP-848 (generally available from 2.12)"

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self.common: dict[str, Any] = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000}
