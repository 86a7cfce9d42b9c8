"""``odradek cluster-import`` carries a single node's ACLs, SCRAM users, quotas and dynamic configs
into a cluster, where a broker of the cluster enforces and describes them."""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from compat_tests.kit.brokers import RunningBroker, odradek_cli, start_odradek
from compat_tests.kit.etcd_cluster import EtcdCluster
from compat_tests.kit.raw_protocol import ask
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
TOPIC, LITERAL, ANY, WRITE, ALLOW, BROKER, SET = 2, 3, 1, 4, 3, 4, 0
SCRAM_SHA_256, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3


def _ask(broker: RunningBroker, api_key: ApiKey, version: int, body: dict[str, Any]) -> dict[str, Any]:
    return ask(broker.bootstrap, api_key, version, body, 10.0)


def _set_state(broker: RunningBroker) -> None:
    """An ACL, a SCRAM user, a quota, a default and a per-broker dynamic config, through ``broker``."""
    acl = {"resource_type": TOPIC, "resource_name": "orders", "resource_pattern_type": LITERAL,
           "principal": "User:alice", "host": "*", "operation": WRITE, "permission_type": ALLOW}  # fmt: skip
    assert _ask(broker, ApiKey.CREATE_ACLS, 3, {"creations": [acl]})["results"][0]["error_code"] == 0
    salt = os.urandom(16)
    user = {"name": "bob", "mechanism": SCRAM_SHA_256, "iterations": 4096, "salt": salt,
            "salted_password": hashlib.pbkdf2_hmac("sha256", b"secret", salt, 4096)}  # fmt: skip
    answer = _ask(broker, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {"deletions": [], "upsertions": [user]})
    assert answer["results"][0]["error_code"] == 0
    quota = {"entity": [{"entity_type": "client-id", "entity_name": "batch"}],
             "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}  # fmt: skip
    answer = _ask(broker, ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": [quota], "validate_only": False})
    assert answer["entries"][0]["error_code"] == 0
    for entity, value in (("", "16000"), ("4", "17000")):
        config = {"name": "log.cleaner.backoff.ms", "config_operation": SET, "value": value}
        resource = {"resource_type": BROKER, "resource_name": entity, "configs": [config]}
        answer = _ask(
            broker, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {"resources": [resource], "validate_only": False}
        )
        assert answer["responses"][0]["error_code"] == 0, answer


def _import(data_dir: Path, cluster: str, prefix: str) -> str:
    done = odradek_cli(
        "cluster-import", "--data-dir", str(data_dir), "--cluster", cluster, "--prefix", prefix
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.timeout(180)
def test_a_single_nodes_state_is_enforced_by_a_cluster_member_after_import(
    tmp_path: Path, etcd_cluster: EtcdCluster
) -> None:
    single = start_odradek(tmp_path / "single", {**AUTHORIZER, "node.id": "4"})
    try:
        _set_state(single)
    finally:
        single.stop()
    cluster = "etcd://" + ",".join(e.split("://")[-1] for e in etcd_cluster.endpoints)
    prefix = f"/import-{uuid.uuid4().hex[:8]}"
    first = _import(tmp_path / "single" / "data", cluster, prefix)
    assert first.count("imported") == 4, first
    assert "odradek-client-metrics.json" in first and "not in the data directory" in first
    again = _import(tmp_path / "single" / "data", cluster, prefix)
    assert again.count("skipped: the cluster has its own") == 4, again

    member_settings = {
        **AUTHORIZER,
        "node.id": "4",
        "cluster.etcd.endpoints": cluster,
        "cluster.etcd.prefix": prefix,
    }
    member = start_odradek(tmp_path / "member", member_settings)
    try:
        acl_filter = {"resource_type_filter": TOPIC, "resource_name_filter": None, "pattern_type_filter": ANY,
                      "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}  # fmt: skip
        acls = _ask(member, ApiKey.DESCRIBE_ACLS, 3, acl_filter)
        assert [(r["resource_name"], a["principal"]) for r in acls["resources"] for a in r["acls"]] == [
            ("orders", "User:alice")
        ]
        users = _ask(member, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
        assert [(r["user"], [c["mechanism"] for c in r["credential_infos"]]) for r in users["results"]] == [
            ("bob", [SCRAM_SHA_256])
        ]
        component = {"entity_type": "client-id", "match_type": 0, "match": "batch"}
        quotas = _ask(member, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {"components": [component], "strict": False})
        assert [(v["key"], v["value"]) for e in quotas["entries"] for v in e["values"]] == [
            ("producer_byte_rate", 1024.0)
        ]
        resource = {
            "resource_type": BROKER,
            "resource_name": "4",
            "configuration_keys": ["log.cleaner.backoff.ms"],
        }
        configs = _ask(member, ApiKey.DESCRIBE_CONFIGS, 4,
                       {"resources": [resource], "include_synonyms": True, "include_documentation": False})  # fmt: skip
        (entry,) = configs["results"][0]["configs"]
        assert configs["results"][0]["error_code"] == ErrorCode.NONE
        assert (entry["value"], entry["config_source"]) == ("17000", DYNAMIC_BROKER_CONFIG)
        assert ("16000", DYNAMIC_DEFAULT_BROKER_CONFIG) in [
            (s["value"], s["source"]) for s in entry["synonyms"]
        ]
    finally:
        member.stop()
