"""Group administration through stock admin clients: list, describe, offsets and lag, delete."""

from __future__ import annotations

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaConsumer, errors
from kafka.structs import OffsetAndMetadata, TopicPartition

from tests.integration import test_groups_sharing as sharing
from tests.integration.broker_process import OdradekProcess
from tests.integration.waiting import wait_until


def _committed(admin: KafkaAdminClient, group: str) -> dict[int, int]:
    return {tp.partition: meta.offset for tp, meta in admin.list_group_offsets(group)[group].items()}


def test_kafka_python_admin_lists_describes_reports_lag_and_deletes(odradek_broker: OdradekProcess) -> None:
    bootstrap, topic, group = odradek_broker.bootstrap, "admin-kp", "admin-kp-group"
    first = sharing.filled_topic(bootstrap, topic, 3, "a", 90)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    member = sharing.kafka_python_member(bootstrap, topic, group, "admin-member")
    sharing.start(member)
    try:
        sharing.wait_for_all([member], first)
        wait_until(lambda: _committed(admin, group) == {0: 30, 1: 30, 2: 30}, "the auto-commit")
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[group]["group_state"] == "Stable"
        assert listed[group]["protocol_type"] == "consumer"
        assert group not in {g["group_id"] for g in admin.list_groups(states_filter=["Empty"])}
        described = admin.describe_groups([group])[group]
        assert described["group_state"] == "Stable"
        assert described["protocol_data"] == "range"
        [only] = described["members"]
        assert only["client_id"] == "admin-member"
        assert only["client_host"] == "/127.0.0.1"
        assert admin.delete_groups([group]) == {group: errors.for_code(68).__name__}  # NON_EMPTY_GROUP
    finally:
        sharing.stop(member)

    # The member left: the group is Empty and its offsets tell the lag.
    wait_until(
        lambda: admin.describe_groups([group])[group]["group_state"] == "Empty", "the group to be Empty"
    )
    sharing.produce(bootstrap, topic, sharing.values("b", 15), 3)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(3)])
    consumer.close()
    committed = _committed(admin, group)
    assert {tp.partition: end - committed[tp.partition] for tp, end in ends.items()} == {0: 5, 1: 5, 2: 5}

    admin.alter_group_offsets(group, {TopicPartition(topic, 0): OffsetAndMetadata(10, "", -1)})
    assert _committed(admin, group)[0] == 10
    admin.delete_group_offsets(group, [TopicPartition(topic, 2)])
    assert set(_committed(admin, group)) == {0, 1}

    assert admin.delete_groups([group]) == {group: "OK"}
    assert admin.describe_groups([group])[group]["group_state"] == "Dead"
    assert group not in {g["group_id"] for g in admin.list_groups()}
    admin.close()


def test_confluent_admin_lists_describes_alters_and_deletes(odradek_broker: OdradekProcess) -> None:
    bootstrap, topic, group = odradek_broker.bootstrap, "admin-ck", "admin-ck-group"
    expected = sharing.filled_topic(bootstrap, topic, 2, "c", 40)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    member = sharing.confluent_member(bootstrap, topic, group, "ck-admin-member")
    sharing.start(member)
    try:
        sharing.wait_for_all([member], expected)
        listed = admin.list_consumer_groups().result(timeout=30)
        assert group in {g.group_id for g in listed.valid}
        description = admin.describe_consumer_groups([group])[group].result(timeout=30)
        assert description.state.name == "STABLE"
        [described_member] = description.members
        assert described_member.client_id == "ck-admin-member"
        assert {tp.partition for tp in described_member.assignment.topic_partitions} == {0, 1}
    finally:
        sharing.stop(member)

    request = ConsumerGroupTopicPartitions(group, [CkTopicPartition(topic, 0), CkTopicPartition(topic, 1)])
    offsets = admin.list_consumer_group_offsets([request])[group].result(timeout=30)
    assert sorted(tp.offset for tp in offsets.topic_partitions) == [20, 20]

    alter = ConsumerGroupTopicPartitions(group, [CkTopicPartition(topic, 1, 3)])
    admin.alter_consumer_group_offsets([alter])[group].result(timeout=30)
    offsets = admin.list_consumer_group_offsets([request])[group].result(timeout=30)
    assert {tp.partition: tp.offset for tp in offsets.topic_partitions} == {0: 20, 1: 3}

    admin.delete_consumer_groups([group])[group].result(timeout=30)
    try:
        admin.delete_consumer_groups([group])[group].result(timeout=30)
    except KafkaException as exc:
        assert exc.args[0].code() == 69  # GROUP_ID_NOT_FOUND
    else:
        raise AssertionError("deleting a deleted group succeeded")
