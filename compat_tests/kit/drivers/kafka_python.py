"""kafka-python: its compatibility driver, bulk client and admin client.

kafka-python derives a "broker version" from the ApiVersions ranges a broker advertises and
gates features on it (record format, idempotence, admin APIs), so it catches dishonest
ApiVersions answers that other clients tolerate. Its failures become
:class:`~compat_tests.kit.drivers.base.ClientError` with Kafka's name for the error code.
"""

from __future__ import annotations

import base64
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any

import kafka.errors
import pytest
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata
from kafka import TopicPartition as KpPartition
from kafka import codec as kp_codec
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    OffsetSpec,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.errors import KafkaError
from kafka.net.compat import KafkaNetClient
from kafka.protocol.admin import AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from compat_tests.kit.drivers import base, kafka_python_api
from compat_tests.kit.drivers.admin import (
    Acl,
    Admin,
    AdminDriver,
    BrokerInfo,
    ConfigValue,
    Replicas,
    TopicInfo,
)
from compat_tests.kit.drivers.base import Message, TopicPartition, client_failure, kafka_error_name
from compat_tests.kit.drivers.bulk import BulkClient, Fetch, Send
from compat_tests.kit.drivers.kafka_python_api import TIMEOUT_MS
from compat_tests.kit.drivers.records import Delivered

NAME = "kafka-python"
ASSIGNORS: dict[str, type] = {
    a.name: a
    for a in (
        RangePartitionAssignor,
        RoundRobinPartitionAssignor,
        StickyPartitionAssignor,
        CooperativeStickyAssignor,
    )
}
"""kafka-python's partition assignors by their (Kafka's) names."""


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


def _commit_offsets(offsets: Mapping[TopicPartition, int]) -> dict[KpPartition, OffsetAndMetadata]:
    """Offsets to commit in kafka-python's shape: no metadata, no leader epoch."""
    return {KpPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}


class KafkaPythonConsumer(base.Consumer):
    """A KafkaConsumer; ``group_id=None`` gives a group-less consumer, as in Java."""

    def __init__(self, driver: KafkaPythonDriver, settings: base.ConsumerSettings) -> None:
        super().__init__(driver)
        with kafka_python_api.errors(NAME):
            self._consumer = KafkaConsumer(
                **kafka_python_api.consumer_config(driver.bootstrap, settings, driver, ASSIGNORS)
            )

    def assign(self, positions: Mapping[TopicPartition, int | None]) -> None:
        with kafka_python_api.errors(NAME):
            kafka_python_api.assign(self._consumer, KpPartition, positions)

    def subscribe(self, topics: Sequence[str]) -> None:
        with kafka_python_api.errors(NAME):
            subscribe_with_metadata(self._consumer, topics)

    def poll(self, max_records: int, timeout_s: float) -> list[base.Received]:
        with kafka_python_api.errors(NAME):
            batches = self._consumer.poll(timeout_ms=int(timeout_s * 1000), max_records=max_records)
        return kafka_python_api.received(batches)

    def assignment(self) -> set[TopicPartition]:
        with kafka_python_api.errors(NAME):
            return {(tp.topic, tp.partition) for tp in self._consumer.assignment()}

    def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        with kafka_python_api.errors(NAME):
            self._consumer.commit(_commit_offsets(offsets))

    def close(self) -> None:
        self._consumer.close()


def _outcome(future: Any) -> int | base.ClientError:
    """A send's offset, or the failure that its future holds."""
    try:
        offset: int = future.get(timeout=base.OP_TIMEOUT_S).offset
    except KafkaError as exc:
        return kafka_python_api.failure(exc, NAME)
    return offset if offset >= 0 else base.NO_OFFSET


class KafkaPythonProducer(base.Producer):
    """A KafkaProducer; its blocking calls (metadata, buffer space) wait at most the send timeout."""

    def __init__(self, driver: KafkaPythonDriver, settings: base.ProducerSettings) -> None:
        super().__init__(driver)
        if settings.compression != "none" and not getattr(kp_codec, f"has_{settings.compression}")():
            driver.unsupported(
                f"{settings.compression} compression (its optional codec library is not installed)"
            )
        config = kafka_python_api.producer_config(driver.bootstrap, settings)
        config["max_block_ms"] = int(settings.timeout_s * 1000)
        config["request_timeout_ms"] = TIMEOUT_MS
        if settings.retries is not None:
            config["retries"] = settings.retries
        with kafka_python_api.errors(NAME):
            self._producer = KafkaProducer(**config)

    def deliver(self, topic: str, messages: Sequence[Message]) -> list[int | base.ClientError]:
        with kafka_python_api.errors(NAME):
            futures = [self._producer.send(topic, **kafka_python_api.send_arguments(m)) for m in messages]
            self._producer.flush(timeout=base.OP_TIMEOUT_S)
        return [_outcome(f) for f in futures]

    def close(self) -> None:
        self._producer.close(timeout=5)


class KafkaPythonTransactionalProducer(KafkaPythonProducer, base.TransactionalProducer):
    """A KafkaProducer with ``transactional_id``; its blocking calls wait at most ``max_block_ms``."""

    def __init__(self, driver: KafkaPythonDriver, transactional_id: str, timeout_ms: int) -> None:
        base.TransactionalProducer.__init__(self, driver)
        config = kafka_python_api.transactional_config(driver.bootstrap, transactional_id, timeout_ms)
        with kafka_python_api.errors(NAME):
            self._producer = KafkaProducer(**config, max_block_ms=TIMEOUT_MS)
            try:
                self._producer.init_transactions()
            except BaseException:
                self._producer.close(timeout=5)
                raise

    def begin(self) -> None:
        with kafka_python_api.errors(NAME):
            self._producer.begin_transaction()

    def send_offsets(self, offsets: Mapping[TopicPartition, int], group: str) -> None:
        """A bare group id stands for the group's metadata, as in Java's ``new ConsumerGroupMetadata(group)``."""
        with kafka_python_api.errors(NAME):
            self._producer.send_offsets_to_transaction(_commit_offsets(offsets), group)

    def commit(self) -> None:
        with kafka_python_api.errors(NAME):
            self._producer.commit_transaction()

    def abort(self) -> None:
        with kafka_python_api.errors(NAME):
            self._producer.abort_transaction()


_KP_CODEC_LIBRARY = {"snappy": "python-snappy", "lz4": "lz4", "zstd": "zstandard"}


class KafkaPythonClient(BulkClient):
    """kafka-python 3.x: pure Python, infers the broker version from ApiVersions ranges."""

    name = NAME

    def codec_unavailable(self, codec: str) -> str | None:
        has = {"none": True, "gzip": True}.get(codec) or getattr(kp_codec, f"has_{codec}")()
        if has:
            return None
        return f"kafka-python needs the optional '{_KP_CODEC_LIBRARY[codec]}' package for {codec}"

    def _produce(self, send: Send) -> list[Delivered]:
        with kafka_python_api.errors(NAME):
            producer = KafkaProducer(
                **kafka_python_api.bulk_producer_config(self.bootstrap, send),
                batch_size=1_000_000,
                max_block_ms=int(send.timeout_s * 1000),
                delivery_timeout_ms=int(send.timeout_s * 1000) + 1000,
            )
            try:
                futures = [
                    producer.send(
                        send.topic,
                        value=r.value,
                        key=r.key,
                        partition=send.partition,
                        timestamp_ms=r.timestamp_ms,
                        headers=list(r.headers),
                    )
                    for r in send.records
                ]
                producer.flush(timeout=send.timeout_s)
                failures = [f.exception for f in futures if f.failed()]
                if failures:
                    # A batch rejected for one record fails the other records with a generic
                    # KafkaError; report the error that carries the broker's code.
                    raise next(
                        (e for e in failures if isinstance(getattr(e, "errno", None), int)), failures[0]
                    )
                return [Delivered(m.partition, m.offset) for m in (f.get(timeout=0) for f in futures)]
            finally:
                producer.close(timeout=5)

    def _consumer(self, reset: str, fetch_bytes: int | None) -> KafkaConsumer:
        return KafkaConsumer(
            **kafka_python_api.bulk_consumer_config(self.bootstrap, reset, fetch_bytes),
            max_poll_records=50_000,
        )

    def _fetch(self, fetch: Fetch) -> None:
        with (
            kafka_python_api.errors(NAME),
            closing(self._consumer(fetch.reset, fetch.fetch_bytes)) as consumer,
        ):
            kafka_python_api.assign_fetch(consumer, KpPartition, fetch)
            for wait in fetch.polls():
                kafka_python_api.take(fetch, consumer.poll(timeout_ms=int(wait * 1000)))

    def list_offsets(self, topic: str, partitions: Sequence[int], spec: str | int) -> dict[int, int]:
        with kafka_python_api.errors(NAME), closing(self._consumer("earliest", None)) as consumer:
            query, argument = kafka_python_api.offset_query(consumer, KpPartition, topic, partitions, spec)
            return kafka_python_api.offsets_by_partition(query(argument, timeout_ms=TIMEOUT_MS))


def _topic_id_text(raw: bytes) -> str:
    """Kafka's printed form of a topic id (URL-safe base64 without padding), as librdkafka shows it."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _raise_for(code: int, what: str) -> None:
    if code:
        raise client_failure(NAME, kafka_error_name(code), what)


def _raise_for_partitions(outcomes: Mapping[KpPartition, type[KafkaError]]) -> None:
    """Raise the first partition error of a group offsets call (error classes by partition)."""
    for tp, error in outcomes.items():
        _raise_for(error.errno, f"{tp.topic}-{tp.partition}")


def _net_client(bootstrap: str) -> KafkaNetClient:
    """kafka-python's bare network client, for requests its admin and producer never send as needed."""
    return KafkaNetClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)


def _request(client: KafkaNetClient, request: Any, node: int | None = None) -> dict[str, Any]:
    """Send one request built from kafka-python's protocol classes to broker ``node`` (None: any
    broker); the answer as a dict."""
    with kafka_python_api.errors(NAME):
        client.check_version(timeout_ms=TIMEOUT_MS)
        if node is None:
            node = client.least_loaded_node(bootstrap_fallback=True)
        response = client.send_and_receive(node, request, timeout_ms=TIMEOUT_MS)
    result: dict[str, Any] = response.to_dict()
    return result


def _kp_acl(acl: Acl, kind: type[ACL] | type[ACLFilter]) -> Any:
    """kafka-python's ACL (or ACLFilter) for a neutral one."""
    pattern_type = (ResourcePattern if kind is ACL else ResourcePatternFilter)(
        ResourceType[acl.resource_type], acl.name, ACLResourcePatternType[acl.pattern]
    )
    return kind(
        acl.principal, acl.host, ACLOperation[acl.operation], ACLPermissionType[acl.permission], pattern_type
    )


def _neutral_acl(acl: ACL) -> Acl:
    pattern = acl.resource_pattern
    return Acl(
        pattern.resource_type.name,
        pattern.resource_name,
        acl.principal,
        acl.operation.name,
        acl.permission_type.name,
        pattern.pattern_type.name,
        acl.host,
    )


class KafkaPythonAdmin(Admin):
    """kafka-python's KafkaAdminClient."""

    name = NAME

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        with kafka_python_api.errors(NAME):
            self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
        self._net: KafkaNetClient | None = None

    def _create_topic(
        self, topic: str, partitions: int, replicas: Replicas, configs: dict[str, str], validate_only: bool
    ) -> None:
        spec: dict[str, Any] = {"configs": configs}
        if isinstance(replicas, int):
            spec |= {"num_partitions": partitions, "replication_factor": replicas}
        else:  # the count and replication factor go as -1, as Kafka wants beside an assignment
            spec["assignments"] = dict(enumerate(replicas))
        with kafka_python_api.errors(NAME):
            self.admin.create_topics({topic: spec}, validate_only=validate_only)

    def delete_topic(self, topic: str) -> None:
        with kafka_python_api.errors(NAME):
            self.admin.delete_topics([topic])

    def create_partitions(
        self, topic: str, total: int, assignments: Sequence[Sequence[int]] | None = None
    ) -> None:
        spec = (
            total if assignments is None else {"count": total, "assignments": [list(r) for r in assignments]}
        )
        with kafka_python_api.errors(NAME):
            self.admin.create_partitions({topic: spec})

    def describe_topic(self, topic: str) -> TopicInfo:
        with kafka_python_api.errors(NAME):
            (description,) = self.admin.describe_topics([topic])
        _raise_for(description["error_code"], f"describe_topics {topic}")
        topic_id = description["topic_id"]
        raw = topic_id.bytes if isinstance(topic_id, uuid.UUID) else uuid.UUID(str(topic_id)).bytes
        return TopicInfo(len(description["partitions"]), _topic_id_text(raw))

    def list_topics(self) -> set[str]:
        with kafka_python_api.errors(NAME):
            return set(self.admin.list_topics())

    def configs(self, resource_type: str, name: str) -> dict[str, ConfigValue]:
        kind = ConfigResourceType[resource_type]
        with kafka_python_api.errors(NAME):
            result = self.admin.describe_configs([ConfigResource(kind, name)], config_filter="all")
        (entries,) = result[kind.name.lower()].values()
        if not entries:
            # KafkaAdminClient drops a resource's error code and returns no entries; every real
            # resource has entries, so ask again raw to report the broker's error.
            resource = DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=int(kind), resource_name=name, configuration_keys=None
            )
            (raw,) = self._send(DescribeConfigsRequest(resources=[resource]))["results"]
            _raise_for(raw["error_code"], f"describe_configs {name}")
        return {
            key: ConfigValue(entry["value"], entry["config_source"], entry["read_only"])
            for key, entry in entries.items()
        }

    def alter_configs(
        self, resource_type: str, name: str, configs: Mapping[str, str | None], *, incremental: bool
    ) -> None:
        ops = {k: v if v is not None else (AlterConfigOp.DELETE, None) for k, v in configs.items()}
        resource = ConfigResource(ConfigResourceType[resource_type], name, ops)
        with kafka_python_api.errors(NAME):
            result = self.admin.alter_configs([resource], incremental=incremental, raise_on_unknown=False)
        outcome = str(result[resource_type.lower()][name])
        if outcome != "OK":
            # kafka-python reports a failed resource as the text of its exception, "[Error 40] ...".
            code = re.search(r"\[Error (-?\d+)\]", outcome)
            raise client_failure(
                self.name, kafka_error_name(int(code.group(1))) if code else outcome, outcome
            )

    def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        with kafka_python_api.errors(NAME):
            result = self.admin.delete_records({KpPartition(topic, p): o for p, o in before.items()})
        return {tp.partition: r["low_watermark"] for tp, r in result.items()}

    def brokers(self) -> list[BrokerInfo]:
        with kafka_python_api.errors(NAME):
            cluster = self.admin.describe_cluster()
        return [BrokerInfo(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]]

    def list_offsets(
        self, topic: str, partitions: Sequence[int], spec: str | int
    ) -> dict[int, tuple[int, int]]:
        wire = spec if isinstance(spec, int) else OffsetSpec[spec.upper()]
        with kafka_python_api.errors(NAME):
            found = self.admin.list_partition_offsets({KpPartition(topic, p): wire for p in partitions})
        return {tp.partition: (r.offset, r.timestamp) for tp, r in found.items()}

    def _send(self, request: Any, broker: str = "") -> dict[str, Any]:
        """Send one request built from kafka-python's protocol classes through its network client,
        to the broker whose id is ``broker`` (``""``: any broker).

        For the few answers whose error codes KafkaAdminClient drops or never sees. A request about
        one broker's own configs goes to that broker, as Kafka's admin clients send it: another
        broker answers INVALID_REQUEST.
        """
        if self._net is None:
            self._net = _net_client(self.bootstrap)
        return _request(self._net, request, int(broker) if broker else None)

    def alter_broker_resource(
        self,
        name: str,
        ops: Mapping[str, tuple[int, str | None]],
        *,
        incremental: bool,
        validate_only: bool = False,
    ) -> tuple[str, str | None]:
        """IncrementalAlterConfigs (``{key: (operation, value)}``, Kafka's operation numbers) or
        the legacy AlterConfigs (operations ignored) for one BROKER resource, sent as built: the
        cluster-wide default (``name=""``) too, which KafkaAdminClient and librdkafka refuse to
        address. Returns Kafka's error name and message ("NONE" when accepted)."""
        if incremental:
            entry = IncrementalAlterConfigsRequest.AlterConfigsResource.AlterableConfig
            configs = [entry(name=k, config_operation=op, value=v) for k, (op, v) in ops.items()]
            resource = IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=int(ConfigResourceType.BROKER), resource_name=name, configs=configs
            )
            request: Any = IncrementalAlterConfigsRequest(resources=[resource], validate_only=validate_only)
        else:
            legacy = AlterConfigsRequest.AlterConfigsResource
            resource = legacy(
                resource_type=int(ConfigResourceType.BROKER),
                resource_name=name,
                configs=[legacy.AlterableConfig(name=k, value=v) for k, (_, v) in ops.items()],
            )
            request = AlterConfigsRequest(resources=[resource], validate_only=validate_only)
        (answer,) = self._send(request, name)["responses"]
        return kafka_error_name(answer["error_code"]), answer["error_message"]

    def describe_broker_resource(
        self, name: str, keys: Sequence[str] | None = None
    ) -> dict[str, dict[str, Any]]:
        """DescribeConfigs (with synonyms) of one BROKER resource, ``""`` the cluster-wide default:
        each entry as Kafka sent it (value, config_source, read_only, is_sensitive, synonyms, ...)."""
        resource = DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=int(ConfigResourceType.BROKER), resource_name=name, configuration_keys=keys
        )
        request = DescribeConfigsRequest(resources=[resource], include_synonyms=True)
        (result,) = self._send(request, name)["results"]
        _raise_for(result["error_code"], f"describe_configs broker {name!r}")
        return {entry["name"]: entry for entry in result["configs"]}

    def metadata_allowing_creation(self, topic: str) -> TopicInfo:
        """kafka-python's producer only times out on an unknown topic, so the Metadata request
        (allow_auto_topic_creation=true, as producers send it) goes out raw to see the error code."""
        request = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True
        )
        (found,) = (t for t in self._send(request)["topics"] if t["name"] == topic)
        _raise_for(found["error_code"], f"metadata {topic}")
        return TopicInfo(len(found["partitions"]), "")

    def describe_group(self, group: str) -> base.GroupDescription:
        with kafka_python_api.errors(NAME):
            description = self.admin.describe_groups([group])[group]
        if description["error"]:
            # kafka-python returns a group's error code as text beside its (empty) description.
            raise client_failure(NAME, "describe_groups", description["error"])
        members = [
            frozenset(
                (assigned["topic"], p)
                for assigned in m["member_assignment"]["assigned_partitions"]
                for p in assigned["partitions"]
            )
            for m in description["members"]
        ]
        return base.GroupDescription(
            base.kafka_state_name(description["group_state"]),
            members,
            description["protocol_data"],
            [(m["client_id"], m["client_host"]) for m in description["members"]],
        )

    def list_groups(self, states: Sequence[str] = ()) -> dict[str, base.GroupListing]:
        """kafka-python lists every group; those of other protocol types (Connect's) are left out."""
        with kafka_python_api.errors(NAME):
            listed = self.admin.list_groups(states_filter=list(states) or None)
        return {
            g["group_id"]: base.GroupListing(
                g["group_state"], not g["protocol_type"], g["group_type"].lower()
            )
            for g in listed
            if g["protocol_type"] in ("consumer", "")
        }

    def delete_group(self, group: str) -> None:
        """kafka-python answers "OK" or the error class's name."""
        with kafka_python_api.errors(NAME):
            outcome = self.admin.delete_groups([group])[group]
        if outcome != "OK":
            raise client_failure(NAME, kafka_error_name(getattr(kafka.errors, outcome).errno), outcome)

    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        with kafka_python_api.errors(NAME):
            result = self.admin.list_group_offsets({group: None})[group]
        return {(tp.topic, tp.partition): meta.offset for tp, meta in result.items()}

    def alter_group_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        with kafka_python_api.errors(NAME):
            _raise_for_partitions(self.admin.alter_group_offsets(group, _commit_offsets(offsets)))

    def delete_group_offsets(self, group: str, partitions: Sequence[TopicPartition]) -> None:
        with kafka_python_api.errors(NAME):
            found = self.admin.delete_group_offsets(group, [KpPartition(t, p) for t, p in partitions])
            _raise_for_partitions(found)

    def create_acls(self, acls: Sequence[Acl]) -> list[str | None]:
        bindings = [_kp_acl(acl, ACL) for acl in acls]
        with kafka_python_api.errors(NAME):
            outcome = self.admin.create_acls(bindings)
        # kafka-python lists the failures' error classes in request order, without their ACLs.
        failures = iter(outcome["failed"])
        return [
            None if any(b is ok for ok in outcome["succeeded"]) else kafka_error_name(next(failures).errno)
            for b in bindings
        ]

    def describe_acls(self, acl_filter: Acl) -> set[Acl]:
        with kafka_python_api.errors(NAME):
            found, _ = self.admin.describe_acls(_kp_acl(acl_filter, ACLFilter))
        return {_neutral_acl(acl) for acl in found}

    def delete_acls(self, filters: Sequence[Acl]) -> list[set[Acl]]:
        with kafka_python_api.errors(NAME):
            results = self.admin.delete_acls([_kp_acl(f, ACLFilter) for f in filters])
            for _, _, error in results:
                if error.errno != 0:
                    raise error()
        return [{_neutral_acl(acl) for acl in deleted} for _, deleted, _ in results]

    def authorized_operations(self, resource_type: str, name: str) -> set[str]:
        with kafka_python_api.errors(NAME):
            if resource_type == "TOPIC":
                (topic,) = self.admin.describe_topic_partitions([name])["topics"]
                bits = topic["topic_authorized_operations"]
            elif resource_type == "GROUP":
                bits = self.admin.describe_groups([name], include_authorized_operations=True)[name][
                    "authorized_operations"
                ]
            else:
                pytest.skip("kafka-python's describe_cluster does not ask for authorized operations")
        return {ACLOperation(code).name for code in range(32) if (bits or 0) >> code & 1}

    def close(self) -> None:
        self.admin.close()
        if self._net is not None:
            self._net.close()


class KafkaPythonDriver(AdminDriver):
    """Drives kafka-python's KafkaProducer, KafkaConsumer and KafkaAdminClient."""

    name = NAME
    consumer_class = KafkaPythonConsumer
    consumer_options = frozenset(base.OPTIONAL_CONSUMER_SETTINGS)
    producer_class = KafkaPythonProducer
    transactional_producer_class = KafkaPythonTransactionalProducer
    admin_class = KafkaPythonAdmin


def raw_produce(bootstrap: str, topic: str, partition: int) -> str:
    """Send one Produce request (acks=all, one record) without asking Metadata first, and return
    the partition's error name ("NONE" on success).

    Stock producers never send to a topic Metadata did not list, so this is the only way to see
    what the broker itself answers for an unknown topic or partition. The request and its record
    batch are built by kafka-python's protocol and record classes.
    """
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    builder.append(timestamp=int(time.time() * 1000), key=b"k", value=b"v", headers=[])
    builder.close()
    partition_data = ProduceRequest.TopicProduceData.PartitionProduceData(
        index=partition, records=builder.buffer()
    )
    request = ProduceRequest(
        max_version=12,  # v13 names topics by id; this checks what a name that was never created gets
        transactional_id=None,
        acks=-1,
        timeout_ms=TIMEOUT_MS,
        topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[partition_data])],
    )
    with closing(_net_client(bootstrap)) as client:
        response = _request(client, request)
    codes = [p["error_code"] for t in response["responses"] for p in t["partition_responses"]]
    assert len(codes) == 1, response
    return kafka_error_name(codes[0])


@dataclass(frozen=True)
class FetchAnswer:
    """A Fetch response as a session test reads it: the top-level error name, the session id,
    and the record bytes of every partition the answer names, by (topic, partition)."""

    error: str
    session_id: int
    partitions: dict[tuple[str, int], int]


class RawFetcher:
    """Fetch v12 requests with the session id and epoch the test chooses, over one connection.

    Stock consumers choose their own session ids and epochs; this sends exactly what a client
    in a given session state sends (e.g. a Go client's sessionless full fetch, session -1 with
    epoch -1), built by kafka-python's protocol classes, to see what the broker itself answers.
    """

    def __init__(self, bootstrap: str) -> None:
        self._client = _net_client(bootstrap)
        self._node: int | None = None
        """The broker every fetch goes to: the leader of the first partition fetched, since a
        fetch session lives on one broker (another broker does not know it, and answers
        NOT_LEADER_OR_FOLLOWER for partitions it does not lead)."""

    def close(self) -> None:
        self._client.close()

    def _describe(self, topic: str) -> dict[str, Any]:
        request = MetadataRequest(
            min_version=10,
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
            allow_auto_topic_creation=False,
        )
        (found,) = _request(self._client, request)["topics"]
        return found

    def topic_id(self, topic: str) -> uuid.UUID:
        """The topic's id, as Metadata (v10+) gives it."""
        topic_id: uuid.UUID = self._describe(topic)["topic_id"]
        return topic_id

    def _broker_for(self, wanted: Mapping[str, Mapping[int, int]]) -> int | None:
        if self._node is None and wanted:
            topic, offsets = next(iter(wanted.items()))
            first = min(offsets)
            (leader,) = (
                p["leader_id"] for p in self._describe(topic)["partitions"] if p["partition_index"] == first
            )
            self._node = leader
        return self._node

    def fetch(
        self,
        session_id: int,
        session_epoch: int,
        wanted: Mapping[str, Mapping[int, int]],
        forgotten: Mapping[str, Sequence[int]] | None = None,
        topic_ids: Mapping[str, uuid.UUID] | None = None,
    ) -> FetchAnswer:
        """One Fetch that does not wait: ``wanted`` maps topics to {partition: fetch offset}.

        Fetch v12 names topics; given ``topic_ids`` (names to ids), v13+ names them by id.
        """

        def topic_key(topic: str) -> dict[str, Any]:
            return {"topic_id": topic_ids[topic]} if topic_ids else {"topic": topic}

        topics = [
            FetchRequest.FetchTopic(
                **topic_key(topic),
                partitions=[
                    FetchRequest.FetchTopic.FetchPartition(
                        partition=partition,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                    )
                    for partition, offset in offsets.items()
                ],
            )
            for topic, offsets in wanted.items()
        ]
        request = FetchRequest(
            **({"min_version": 13} if topic_ids else {"max_version": 12}),
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=session_id,
            session_epoch=session_epoch,
            topics=topics,
            forgotten_topics_data=[
                FetchRequest.ForgottenTopic(**topic_key(topic), partitions=list(partitions))
                for topic, partitions in (forgotten or {}).items()
            ],
            rack_id="",
        )
        response = _request(self._client, request, self._broker_for(wanted))
        names = {topic_id: name for name, topic_id in (topic_ids or {}).items()}
        return FetchAnswer(
            kafka_error_name(response["error_code"]),
            response["session_id"],
            {
                (names[t["topic_id"]] if topic_ids else t["topic"], p["partition_index"]): len(
                    p["records"] or b""
                )
                for t in response["responses"]
                for p in t["partitions"]
            },
        )


class RawMetadata:
    """Metadata requests that allow auto-creation (as producers send them), over one
    connection, answered as the broker said them: what a client sees while a topic is created."""

    def __init__(self, bootstrap: str) -> None:
        self._client = _net_client(bootstrap)
        self.broker_ids: set[int] = set()
        """The brokers the last answer listed."""

    def close(self) -> None:
        self._client.close()

    def topic(self, topic: str) -> tuple[str, list[tuple[str, int]]]:
        """The topic's error name and its partitions' (error name, leader id), by index."""
        request = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True
        )
        answer = _request(self._client, request)
        self.broker_ids = {broker["node_id"] for broker in answer["brokers"]}
        (found,) = (t for t in answer["topics"] if t["name"] == topic)
        partitions = sorted(found["partitions"], key=lambda p: p["partition_index"])
        return kafka_error_name(found["error_code"]), [
            (kafka_error_name(p["error_code"]), p["leader_id"]) for p in partitions
        ]


def raw_fetch(
    bootstrap: str, topic: str, partition: int, *, session_id: int, session_epoch: int
) -> tuple[str, int]:
    """Fetch one partition from offset 0 naming the given fetch session; return the top-level
    error name and how many record bytes came back."""
    with closing(RawFetcher(bootstrap)) as fetcher:
        answer = fetcher.fetch(session_id, session_epoch, {topic: {partition: 0}})
    return answer.error, sum(answer.partitions.values())
