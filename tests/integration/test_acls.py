"""The built-in authorizer's broker-side duties: ACLs survive restarts, super.users, the
default when no ACL applies, SECURITY_DISABLED without an authorizer, and the ACL bound.

Clients are PLAINTEXT, so every request is ``User:ANONYMOUS``; what Kafka also does is
checked against Apache Kafka in ``compat_tests/test_acls.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.client.admin_client import KafkaConnection
from broker.services.security.acl_model import AclOperation, AclPermissionType, PatternType, ResourceType
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.drivers.admin import Acl
from compat_tests.kit.drivers.base import ClientError, ErrorKind
from compat_tests.kit.drivers.catalog import ADMINS
from compat_tests.kit.drivers.confluent import ConfluentAdmin
from compat_tests.kit.drivers.kafka_python import KafkaPythonAdmin, KafkaPythonClient
from compat_tests.kit.drivers.records import make_records, unique_topic
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

pytestmark = pytest.mark.timeout(120)

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
OPEN = {"authorizer.class.name": STANDARD_AUTHORIZER, "allow.everyone.if.no.acl.found": "true"}
ANONYMOUS = "User:ANONYMOUS"
EVERYTHING = Acl("ANY", None, None, "ANY", "ANY", "ANY", None)


@pytest.fixture
def open_broker(tmp_path: Path) -> Iterator[OdradekProcess]:
    broker = OdradekProcess(tmp_path / "broker", OPEN).start()
    try:
        yield broker
    finally:
        broker.stop()


def produce_refusal(bootstrap: str, topic: str) -> ErrorKind | None:
    """What producing one record to ``topic`` answers: None when it is stored."""
    try:
        KafkaPythonClient(bootstrap).produce(topic, make_records(1), timeout_s=15)
    except ClientError as exc:
        return exc.kind
    return None


def test_acls_survive_a_restart_and_the_default_can_close_everything(open_broker: OdradekProcess) -> None:
    """ACLs are stored in the data directory; restarted with allow.everyone.if.no.acl.found=false,
    only what an ACL allows is open, and CreateAcls (CLUSTER ALTER) is refused."""
    allowed, closed = unique_topic("allowed"), unique_topic("closed")
    acls = [
        Acl("TOPIC", allowed, ANONYMOUS, "WRITE"),
        Acl("TOPIC", "closed-", "User:bob", "READ", pattern="PREFIXED"),
    ]
    with ConfluentAdmin(open_broker.bootstrap) as admin:
        admin.create_topic(allowed, 1)
        admin.create_topic(closed, 1)
        assert admin.create_acls(acls) == [None, None]
    assert (open_broker.data_dir / "acls.json").exists()
    open_broker.stop()
    open_broker.overrides["allow.everyone.if.no.acl.found"] = "false"
    open_broker.start()
    with KafkaPythonAdmin(open_broker.bootstrap) as admin:
        with pytest.raises(ClientError) as refused:
            admin.describe_acls(EVERYTHING)
        assert refused.value.error == "CLUSTER_AUTHORIZATION_FAILED"
        assert admin.create_acls([Acl("TOPIC", closed, ANONYMOUS, "ALL")]) == ["CLUSTER_AUTHORIZATION_FAILED"]
    assert produce_refusal(open_broker.bootstrap, allowed) is None
    assert produce_refusal(open_broker.bootstrap, closed) == ErrorKind.TOPIC_AUTHORIZATION_FAILED
    open_broker.stop()
    open_broker.overrides["allow.everyone.if.no.acl.found"] = "true"
    open_broker.start()
    with ConfluentAdmin(open_broker.bootstrap) as admin:
        assert admin.describe_acls(EVERYTHING) == set(acls)


def test_super_users_ignore_acls(tmp_path: Path) -> None:
    topic = unique_topic("super")
    broker = OdradekProcess(tmp_path / "broker", {**OPEN, "super.users": f"User:admin;{ANONYMOUS}"}).start()
    try:
        with ConfluentAdmin(broker.bootstrap) as admin:
            admin.create_topic(topic, 1)
            assert admin.create_acls([Acl("TOPIC", topic, ANONYMOUS, "ALL", "DENY")]) == [None]
        assert produce_refusal(broker.bootstrap, topic) is None
    finally:
        broker.stop()


@pytest.mark.parametrize("admin_client", sorted(ADMINS))
def test_no_authorizer_means_security_disabled(admin_client: str, tmp_path: Path) -> None:
    broker = OdradekProcess(tmp_path / "broker").start()
    try:
        with ADMINS[admin_client](broker.bootstrap) as admin:
            assert admin.create_acls([Acl("TOPIC", "t", ANONYMOUS, "READ")]) == ["SECURITY_DISABLED"]
            with pytest.raises(ClientError) as refused:
                admin.delete_acls([EVERYTHING])
            assert refused.value.error == "SECURITY_DISABLED"
    finally:
        broker.stop()


def test_the_number_of_acls_is_bounded(tmp_path: Path) -> None:
    broker = OdradekProcess(tmp_path / "broker", {**OPEN, "authorizer.max.acls": "2"}).start()
    try:
        with ConfluentAdmin(broker.bootstrap) as admin:
            acls = [Acl("TOPIC", f"t{i}", "User:bob", "READ") for i in range(3)]
            assert admin.create_acls(acls) == [None, None, "POLICY_VIOLATION"]
            assert admin.create_acls(acls[:1]) == [None]  # already there: no new room needed
            assert len(admin.describe_acls(EVERYTHING)) == 2
    finally:
        broker.stop()


def leader_epoch_errors(bootstrap: str, topic: str) -> list[int]:
    with KafkaConnection(bootstrap) as connection:
        answer = connection.request(
            ApiKey.OFFSET_FOR_LEADER_EPOCH,
            4,
            {
                "replica_id": -1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
                    }
                ],
            },
        )
    return [p["error_code"] for t in answer["topics"] for p in t["partitions"]]


def test_offset_for_leader_epoch_trusts_cluster_action(open_broker: OdradekProcess) -> None:
    """As Kafka: CLUSTER_ACTION on the cluster (here the default, no ACL covers the cluster)
    answers every topic; without it each topic needs DESCRIBE."""
    topic = unique_topic("epochs")
    with ConfluentAdmin(open_broker.bootstrap) as admin:
        admin.create_topic(topic, 1)
        assert admin.create_acls([Acl("TOPIC", topic, ANONYMOUS, "DESCRIBE", "DENY")]) == [None]
        assert leader_epoch_errors(open_broker.bootstrap, topic) == [ErrorCode.NONE]
        assert admin.create_acls([Acl("CLUSTER", "kafka-cluster", ANONYMOUS, "CLUSTER_ACTION", "DENY")]) == [
            None
        ]
        assert leader_epoch_errors(open_broker.bootstrap, topic) == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]


def test_changes_that_cannot_be_stored_are_answered_request_timed_out(open_broker: OdradekProcess) -> None:
    """What Kafka answers when its controller cannot commit in time, for ACLs, SCRAM
    credentials and client quotas alike; the broker serves on and takes them once it can."""
    blocked = [
        open_broker.data_dir / f"{name}.tmp"
        for name in ("acls.json", "scram-credentials.json", "client-quotas.json")
    ]
    for path in blocked:
        path.mkdir()  # where each document's new content would be written first
    acl = {
        "resource_type": ResourceType.TOPIC,
        "resource_name": "t",
        "resource_pattern_type": PatternType.LITERAL,
        "principal": "User:bob",
        "host": "*",
        "operation": AclOperation.READ,
        "permission_type": AclPermissionType.ALLOW,
    }
    every_acl = {
        "resource_type_filter": ResourceType.ANY,
        "resource_name_filter": None,
        "pattern_type_filter": PatternType.ANY,
        "principal_filter": None,
        "host_filter": None,
        "operation": AclOperation.ANY,
        "permission_type": AclPermissionType.ANY,
    }
    upsertion = {
        "name": "bob",
        "mechanism": 1,
        "iterations": 4096,
        "salt": b"s" * 16,
        "salted_password": b"p" * 32,
    }
    quota = {
        "entity": [{"entity_type": "user", "entity_name": "bob"}],
        "ops": [{"key": "producer_byte_rate", "value": 1000.0, "remove": False}],
    }

    def timed_out(result: dict[str, Any]) -> bool:
        return (
            result["error_code"] == ErrorCode.REQUEST_TIMED_OUT
            and "cannot be written" in result["error_message"]
        )

    with KafkaConnection(open_broker.bootstrap) as connection:
        created = connection.request(
            ApiKey.CREATE_ACLS, 2, {"creations": [acl, {**acl, "resource_name": ""}]}
        )
        assert timed_out(created["results"][0])
        assert created["results"][1]["error_code"] == ErrorCode.INVALID_REQUEST
        deleted = connection.request(ApiKey.DELETE_ACLS, 2, {"filters": [every_acl]})
        assert timed_out(deleted["filter_results"][0])
        altered = connection.request(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {"deletions": [], "upsertions": [upsertion]}
        )
        assert timed_out(altered["results"][0])
        quotas = connection.request(
            ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": [quota], "validate_only": False}
        )
        assert timed_out(quotas["entries"][0])
        for path in blocked:
            path.rmdir()
        created = connection.request(ApiKey.CREATE_ACLS, 2, {"creations": [acl]})
        assert created["results"] == [{"error_code": ErrorCode.NONE, "error_message": None}]
