"""aiokafka: its compatibility driver and bulk client.

aiokafka is asyncio-native; its consumers rely on background tasks (heartbeats, rebalances, fetch
prefetching) that only progress while the event loop runs. The driver therefore runs one loop in
a daemon thread for its whole life and submits every call to it, so a consumer left idle between
two scenario steps still heartbeats like it would in a real application.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioPartition
from aiokafka import codec as aio_codec
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.errors import KafkaError, for_code
from aiokafka.partitioner import DefaultPartitioner

from compat_tests.kit.drivers import base, kafka_python_api
from compat_tests.kit.drivers.base import GroupDescription, Message, TopicPartition
from compat_tests.kit.drivers.bulk import BulkClient, Fetch, Send
from compat_tests.kit.drivers.kafka_python_api import TIMEOUT_MS
from compat_tests.kit.drivers.records import Delivered, Record

T = TypeVar("T")
NAME = "aiokafka"
ASSIGNORS: dict[str, type] = {
    a.name: a for a in (RangePartitionAssignor, RoundRobinPartitionAssignor, StickyPartitionAssignor)
}
"""aiokafka's partition assignors by their (Kafka's) names; it has no cooperative one."""


def _raise_error_code(code: int, node: Any) -> NoReturn:
    """Raise a Kafka error code found in a raw response ``node`` as a classified ClientError."""
    name = for_code(code).__name__
    raise base.ClientError(base.classify(name), f"{name}: {node}")


def _check_error_codes(response: Any) -> None:
    """aiokafka's admin calls return raw responses; raise the first non-zero error code in one."""

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            code = node.get("error_code")
            if code:
                _raise_error_code(code, node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(response.to_object())


def _commit_offsets(offsets: Mapping[TopicPartition, int]) -> dict[AioPartition, int]:
    """Offsets to commit in aiokafka's shape (the next offset to read by partition)."""
    return {AioPartition(t, p): o for (t, p), o in offsets.items()}


class AiokafkaConsumer(base.Consumer):
    """An AIOKafkaConsumer living on the driver's loop."""

    def __init__(self, driver: AiokafkaDriver, settings: base.ConsumerSettings) -> None:
        super().__init__(driver)
        self._driver = driver

        async def start() -> AIOKafkaConsumer:
            consumer = AIOKafkaConsumer(
                **kafka_python_api.consumer_config(driver.bootstrap, settings, driver, ASSIGNORS)
            )
            await consumer.start()
            return consumer

        self._consumer = driver.run(start())

    def assign(self, positions: Mapping[TopicPartition, int | None]) -> None:
        async def assign() -> None:
            kafka_python_api.assign(self._consumer, AioPartition, positions)

        self._driver.run(assign())

    def subscribe(self, topics: Sequence[str]) -> None:
        async def subscribe() -> None:
            self._consumer.subscribe(list(topics))

        self._driver.run(subscribe())

    def poll(self, max_records: int, timeout_s: float) -> list[base.Received]:
        batches = self._driver.run(
            self._consumer.getmany(timeout_ms=int(timeout_s * 1000), max_records=max_records)
        )
        return kafka_python_api.received(batches)

    def assignment(self) -> set[TopicPartition]:
        async def assignment() -> set[TopicPartition]:
            return {(tp.topic, tp.partition) for tp in self._consumer.assignment()}

        return self._driver.run(assignment())

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._driver.run(self._consumer.commit(_commit_offsets(offsets)))

    def close(self) -> None:
        self._driver.run(self._consumer.stop())


async def _outcomes(
    producer: AIOKafkaProducer, topic: str, messages: Sequence[Message]
) -> list[int | base.ClientError]:
    """Send ``messages`` in order, wait for every delivery, return each one's offset or failure."""
    futures = [await producer.send(topic, **kafka_python_api.send_arguments(m)) for m in messages]
    outcomes: list[int | base.ClientError] = []
    for result in await asyncio.gather(*futures, return_exceptions=True):
        if isinstance(result, KafkaError):
            outcomes.append(kafka_python_api.failure(result, NAME))
        elif isinstance(result, BaseException):
            raise result
        else:
            outcomes.append(result.offset if result is not None and result.offset >= 0 else base.NO_OFFSET)
    return outcomes


class AiokafkaProducer(base.Producer):
    """An AIOKafkaProducer on the driver's loop.

    aiokafka has no ``retries`` setting: it retries until its request timeout (the settings'
    ``timeout_s``), so ``retries`` is ignored.
    """

    def __init__(self, driver: AiokafkaDriver, settings: base.ProducerSettings) -> None:
        super().__init__(driver)
        config = kafka_python_api.producer_config(driver.bootstrap, settings)
        config["request_timeout_ms"] = int(settings.timeout_s * 1000)
        self._start(driver, config)

    def _start(self, driver: AiokafkaDriver, config: Mapping[str, Any]) -> None:
        """Start the producer on the driver's loop (``start()`` fails cleanly or not at all)."""
        self._driver = driver

        async def start() -> AIOKafkaProducer:
            producer = AIOKafkaProducer(**config)
            try:
                await producer.start()
            except BaseException:
                await producer.stop()
                raise
            return producer

        self._producer = driver.run(start())

    def deliver(self, topic: str, messages: Sequence[Message]) -> list[int | base.ClientError]:
        return self._driver.run(_outcomes(self._producer, topic, messages))

    def close(self) -> None:
        self._driver.run(self._producer.stop())


class AiokafkaTransactionalProducer(AiokafkaProducer, base.TransactionalProducer):
    """An AIOKafkaProducer with ``transactional_id`` on the driver's loop.

    aiokafka has no separate init_transactions: ``start()`` waits for InitProducerId when a
    transactional id is set, so an open handle has fenced its predecessors as in other clients.
    """

    def __init__(self, driver: AiokafkaDriver, transactional_id: str, timeout_ms: int) -> None:
        base.TransactionalProducer.__init__(self, driver)
        self._start(
            driver, kafka_python_api.transactional_config(driver.bootstrap, transactional_id, timeout_ms)
        )

    def begin(self) -> None:
        self._driver.run(self._producer.begin_transaction())

    def send_offsets(self, offsets: Mapping[TopicPartition, int], group: str) -> None:
        """aiokafka takes the bare group id (it sends no generation or member id)."""
        self._driver.run(self._producer.send_offsets_to_transaction(_commit_offsets(offsets), group))

    def commit(self) -> None:
        self._driver.run(self._producer.commit_transaction())

    def abort(self) -> None:
        self._driver.run(self._producer.abort_transaction())


class AiokafkaDriver(base.Driver):
    """Drives AIOKafkaProducer, AIOKafkaConsumer and AIOKafkaAdminClient on a private loop."""

    name = NAME
    consumer_class = AiokafkaConsumer
    consumer_options = frozenset(base.OPTIONAL_CONSUMER_SETTINGS)
    producer_class = AiokafkaProducer
    transactional_producer_class = AiokafkaTransactionalProducer

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="aiokafka-loop", daemon=True)
        self._thread.start()
        self._admin_client: AIOKafkaAdminClient | None = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the driver's loop; client exceptions come back as ClientError."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        with base.client_errors():
            return future.result(timeout=base.OP_TIMEOUT_S * 2)

    async def _admin(self) -> AIOKafkaAdminClient:
        if self._admin_client is None:
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=TIMEOUT_MS)
            await admin.start()
            self._admin_client = admin
        return self._admin_client

    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        async def list_offsets() -> dict[int, int]:
            consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, request_timeout_ms=TIMEOUT_MS)
            await consumer.start()
            try:
                query, argument = kafka_python_api.offset_query(
                    consumer, AioPartition, topic, partitions, spec
                )
                return kafka_python_api.offsets_by_partition(await query(argument))
            finally:
                await consumer.stop()

        return self.run(list_offsets())

    def list_topics(self) -> set[str]:
        async def list_topics() -> set[str]:
            return set(await (await self._admin()).list_topics())

        return self.run(list_topics())

    def partition_count(self, topic: str) -> int:
        async def describe() -> int:
            (description,) = await (await self._admin()).describe_topics([topic])
            if description["error_code"]:
                _raise_error_code(description["error_code"], description)
            return len(description["partitions"])

        return self.run(describe())

    def _admin_call(self, call: Any) -> None:
        """Run one admin coroutine factory and check the raw response(s) for error codes."""

        async def admin_call() -> None:
            responses = await call(await self._admin())
            for response in responses if isinstance(responses, list) else [responses]:
                _check_error_codes(response)

        self.run(admin_call())

    def create_topic(self, topic: str, partitions: int, configs: Mapping[str, str] | None = None) -> None:
        new = NewTopic(topic, partitions, 1, topic_configs=dict(configs or {}))
        self._admin_call(lambda admin: admin.create_topics([new], timeout_ms=TIMEOUT_MS))

    def delete_topic(self, topic: str) -> None:
        self._admin_call(lambda admin: admin.delete_topics([topic], timeout_ms=TIMEOUT_MS))

    def create_partitions(self, topic: str, total: int) -> None:
        self._admin_call(lambda admin: admin.create_partitions({topic: NewPartitions(total)}))

    def describe_configs(self, topic: str) -> dict[str, str]:
        async def describe() -> dict[str, str]:
            responses = await (await self._admin()).describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, topic)]
            )
            found: dict[str, str] = {}
            for response in responses:
                _check_error_codes(response)
                for resource in response.to_object()["resources"]:
                    found.update({c["config_names"]: c["config_value"] for c in resource["config_entries"]})
            return found

        return self.run(describe())

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        async def delete() -> None:
            records = {AioPartition(topic, partition): RecordsToDelete(before_offset)}
            await (await self._admin()).delete_records(records, timeout_ms=TIMEOUT_MS)

        self.run(delete())

    def alter_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        """aiokafka only has the non-incremental AlterConfigs: unlisted keys return to defaults."""
        resource = ConfigResource(ConfigResourceType.TOPIC, topic, dict(configs))
        self._admin_call(lambda admin: admin.alter_configs([resource]))

    def describe_group(self, group: str) -> GroupDescription:
        async def describe() -> GroupDescription:
            (response,) = await (await self._admin()).describe_consumer_groups([group])
            _check_error_codes(response)
            (description,) = response.to_object()["groups"]
            members = [
                frozenset(
                    (tp.topic, tp.partition)
                    for tp in ConsumerProtocolMemberAssignment.decode(m["member_assignment"]).partitions()
                )
                for m in description["members"]
            ]
            return GroupDescription(description["state"], members)

        return self.run(describe())

    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        async def offsets() -> dict[TopicPartition, int]:
            found = await (await self._admin()).list_consumer_group_offsets(group)
            return {(tp.topic, tp.partition): meta.offset for tp, meta in found.items()}

        return self.run(offsets())

    def close(self) -> None:
        if self._admin_client is not None:
            self.run(self._admin_client.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


class AiokafkaClient(BulkClient):
    """aiokafka: asyncio-native, shares kafka-python's heritage but not its code paths."""

    name = NAME

    def _run(self, coroutine_factory: Callable[[], Any], timeout_s: float) -> Any:
        """Run one coroutine in a fresh event loop under a deadline, translating client errors."""

        async def bounded() -> Any:
            return await asyncio.wait_for(coroutine_factory(), timeout_s)

        with kafka_python_api.errors(self.name):
            try:
                return asyncio.run(bounded())
            except TimeoutError as exc:
                raise base.client_failure(self.name, "TIMEOUT", f"no result after {timeout_s}s") from exc

    def codec_unavailable(self, codec: str) -> str | None:
        if codec == "none" or getattr(aio_codec, f"has_{codec}")():
            return None
        return f"aiokafka lacks a library for {codec}"

    def _produce(self, send: Send) -> list[Delivered]:
        async def produce() -> list[Delivered]:
            config = kafka_python_api.bulk_producer_config(self.bootstrap, send)
            async with AIOKafkaProducer(**config, max_batch_size=1_000_000) as producer:
                return await self._send_batches(producer, send)

        result: list[Delivered] = self._run(produce, send.timeout_s + 10)
        return result

    @staticmethod
    async def _send_batches(producer: AIOKafkaProducer, send: Send) -> list[Delivered]:
        """Fill aiokafka's own batch builders and submit them with ``send_batch``.

        This is aiokafka's documented high-throughput path: per-record ``send()`` costs a future
        and a task wake-up per record and made a 100,000-record case several times slower. The
        partition of each key comes from aiokafka's default (murmur2) partitioner, as ``send()``
        would choose it.
        """

        def append(builder: Any, r: Record) -> bool:
            """Whether ``r`` fit into the batch ``builder`` (a full batch answers None)."""
            metadata = builder.append(
                key=r.key, value=r.value, timestamp=r.timestamp_ms, headers=list(r.headers)
            )
            return metadata is not None

        partitioner = DefaultPartitioner()
        all_partitions = sorted(await producer.partitions_for(send.topic))
        chosen: dict[bytes | None, int] = {}
        open_batches: dict[int, tuple[Any, list[int]]] = {}
        sent: list[tuple[asyncio.Future[Any], int, list[int]]] = []
        for index, r in enumerate(send.records):
            if send.partition is not None:
                p = send.partition
            elif (p := chosen.get(r.key, -1)) < 0:
                p = chosen[r.key] = partitioner(r.key, all_partitions, all_partitions)
            if p not in open_batches:
                open_batches[p] = (producer.create_batch(), [])
            builder, members = open_batches[p]
            if not append(builder, r):
                sent.append((await producer.send_batch(builder, send.topic, partition=p), p, members))
                builder, members = open_batches[p] = (producer.create_batch(), [])
                if not append(builder, r):
                    raise base.client_failure(NAME, "RECORD_TOO_LARGE_FOR_BATCH", f"record {index}")
            members.append(index)
        for p, (builder, members) in open_batches.items():
            sent.append((await producer.send_batch(builder, send.topic, partition=p), p, members))
        results = await asyncio.gather(*(future for future, _, _ in sent))
        delivered: list[Delivered | None] = [None] * len(send.records)
        for (_, p, members), metadata in zip(sent, results, strict=True):
            base_offset = -1 if metadata is None else metadata.offset  # acks=0 resolves to None
            for position, index in enumerate(members):
                delivered[index] = Delivered(p, base_offset + position if base_offset >= 0 else -1)
        assert all(d is not None for d in delivered)
        return delivered  # type: ignore[return-value]

    def _consumer(self, reset: str, fetch_bytes: int | None) -> AIOKafkaConsumer:
        return AIOKafkaConsumer(**kafka_python_api.bulk_consumer_config(self.bootstrap, reset, fetch_bytes))

    def _fetch(self, fetch: Fetch) -> None:
        async def fetch_all() -> None:
            async with self._consumer(fetch.reset, fetch.fetch_bytes) as consumer:
                kafka_python_api.assign_fetch(consumer, AioPartition, fetch)
                for wait in fetch.polls():
                    kafka_python_api.take(
                        fetch, await consumer.getmany(timeout_ms=int(wait * 1000), max_records=50_000)
                    )

        self._run(fetch_all, fetch.timeout_s + 10)

    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        async def list_offsets() -> dict[int, int]:
            async with self._consumer("earliest", None) as consumer:
                query, argument = kafka_python_api.offset_query(
                    consumer, AioPartition, topic, partitions, spec
                )
                return kafka_python_api.offsets_by_partition(await query(argument))

        result: dict[int, int] = self._run(list_offsets, base.OP_TIMEOUT_S)
        return result
