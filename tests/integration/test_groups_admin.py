"""Group administration through stock admin clients: list, describe, offsets and lag, delete."""

from __future__ import annotations

import pytest

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.base import ClientError, ErrorKind
from compat_tests.kit.drivers.confluent import ConfluentAdmin, ConfluentDriver
from compat_tests.kit.drivers.kafka_python import KafkaPythonAdmin, KafkaPythonClient, KafkaPythonDriver
from tests.integration import test_groups_sharing as sharing
from tests.integration.waiting import wait_until


def _committed(admin: KafkaPythonAdmin, group: str) -> dict[int, int]:
    return {p: offset for (_, p), offset in admin.group_offsets(group).items()}


def test_kafka_python_admin_lists_describes_reports_lag_and_deletes(odradek_broker: OdradekProcess) -> None:
    bootstrap, topic, group = odradek_broker.bootstrap, "admin-kp", "admin-kp-group"
    admin = KafkaPythonAdmin(bootstrap)
    with sharing.member_of_filled_topic(KafkaPythonDriver, bootstrap, topic, group, 3, 90):
        wait_until(lambda: _committed(admin, group) == {0: 30, 1: 30, 2: 30}, "the auto-commit")
        listed = admin.list_groups()
        assert listed[group].state == "Stable"
        assert not listed[group].simple  # kafka-python: protocol type "consumer"
        assert group not in admin.list_groups(states=["Empty"])
        described = admin.describe_group(group)
        assert described.state == "Stable"
        assert described.assignor == "range"
        assert described.clients == [(f"{group}-member", "/127.0.0.1")]
        with pytest.raises(ClientError) as refused:
            admin.delete_group(group)
        assert refused.value.error == "NON_EMPTY_GROUP"

    # The member left: the group is Empty and its offsets tell the lag.
    wait_until(lambda: admin.describe_group(group).state == "Empty", "the group to be Empty")
    sharing.produce(bootstrap, topic, sharing.values("b", 15), 3)
    ends = KafkaPythonClient(bootstrap).list_offsets(topic, range(3), "latest")
    committed = _committed(admin, group)
    assert {p: end - committed[p] for p, end in ends.items()} == {0: 5, 1: 5, 2: 5}

    admin.alter_group_offsets(group, {(topic, 0): 10})
    assert _committed(admin, group)[0] == 10
    admin.delete_group_offsets(group, [(topic, 2)])
    assert set(_committed(admin, group)) == {0, 1}

    admin.delete_group(group)
    with pytest.raises(ClientError) as gone:  # DescribeGroups v6: state Dead, GROUP_ID_NOT_FOUND
        admin.describe_group(group)
    assert gone.value.kind == ErrorKind.GROUP_NOT_FOUND
    assert group not in admin.list_groups()
    admin.close()


def test_confluent_admin_lists_describes_alters_and_deletes(odradek_broker: OdradekProcess) -> None:
    bootstrap, topic, group = odradek_broker.bootstrap, "admin-ck", "admin-ck-group"
    admin = ConfluentAdmin(bootstrap)
    with sharing.member_of_filled_topic(ConfluentDriver, bootstrap, topic, group, 2, 40):
        assert group in admin.list_groups()
        description = admin.describe_group(group)
        assert description.state == "Stable"
        assert [client_id for client_id, _ in description.clients] == [f"{group}-member"]
        assert description.members == [frozenset({(topic, 0), (topic, 1)})]

    assert admin.group_offsets(group) == {(topic, 0): 20, (topic, 1): 20}
    admin.alter_group_offsets(group, {(topic, 1): 3})
    assert admin.group_offsets(group) == {(topic, 0): 20, (topic, 1): 3}

    admin.delete_group(group)
    with pytest.raises(ClientError) as gone:
        admin.delete_group(group)
    assert gone.value.error == "GROUP_ID_NOT_FOUND"
