"""Dynamic configs kept in a document: what a store applies is only what the document announces,
so a change made through one broker applies on every broker sharing the document.

Two stores over one :class:`FileDocument` play two brokers of a cluster sharing one etcd key
(the document announces every change to both, as the etcd watch does); the in-process broker at
the end shows the same path from a request to the coordinator and back as a Kafka error.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from broker.config.config import BrokerConfig
from broker.config.dynamic_config import DEFAULT_ENTITY, DynamicConfigError
from broker.services.replication.peer_connection import PeerConnection
from broker.state.documents import DocumentUnavailable, FileDocument
from broker.state.dynamic_config_store import DynamicConfigStore, Update
from compat_tests.kit.in_process import running_broker
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

SESSION_TIMEOUT = "consumer.session.timeout.ms"


def setting(value: str) -> Update:
    """A change that makes a broker layer ``log.retention.ms=value`` alone."""
    return lambda _current: {"log.retention.ms": value}


def document_in(directory: Path) -> FileDocument:
    return FileDocument(directory / DynamicConfigStore.FILE_NAME)


def saved(document: FileDocument) -> dict[str, Any]:
    return json.loads(document.path.read_bytes())


async def test_a_change_through_one_broker_applies_on_every_broker_sharing_the_document(
    tmp_path: Path,
) -> None:
    document = document_in(tmp_path)
    first, second = BrokerConfig({"node.id": "1"}), BrokerConfig({"node.id": "2"})
    through, elsewhere = DynamicConfigStore(document, first), DynamicConfigStore(document, second)
    heard: list[str] = []
    elsewhere.on_change.append(lambda: heard.append("changed"))

    await through.alter_broker(DEFAULT_ENTITY, setting("7200000"))
    assert first.get("log.retention.ms") == second.get("log.retention.ms") == "7200000"
    assert heard == ["changed"]

    await through.alter_broker("1", setting("3600000"))
    assert (first.get("log.retention.ms"), second.get("log.retention.ms")) == ("3600000", "7200000"), (
        "a broker's own layer is its alone"
    )
    await through.alter_group("billing", lambda _current: {SESSION_TIMEOUT: "50000"})
    assert elsewhere.groups == {"billing": {SESSION_TIMEOUT: "50000"}}
    assert saved(document) == {
        "default": {"log.retention.ms": "7200000"},
        "nodes": {"1": {"log.retention.ms": "3600000"}},
        "groups": {"billing": {SESSION_TIMEOUT: "50000"}},
    }
    assert (
        DynamicConfigStore(document_in(tmp_path), BrokerConfig({"node.id": "1"})).groups == elsewhere.groups
    )


async def test_a_refused_change_stores_nothing(tmp_path: Path) -> None:
    document = document_in(tmp_path)
    config = BrokerConfig({"node.id": "1"})
    store = DynamicConfigStore(document, config)
    with pytest.raises(DynamicConfigError, match="Cannot update these configs dynamically"):
        await store.alter_broker("1", lambda _current: {"log.retention.hours": "5"})
    with pytest.raises(DynamicConfigError) as unknown:
        await store.alter_group("billing", lambda _current: {"consumer.unknown": "1"})
    assert unknown.value.code == ErrorCode.INVALID_CONFIG
    await store.alter_broker("1", setting("3600000"), validate_only=True)
    assert document.current() is None and config.dynamic_node == {} and store.groups == {}


async def test_a_single_nodes_layer_is_read_as_this_brokers_own(tmp_path: Path) -> None:
    """A data directory written before clusters: its ``"node"`` layer applies here, and the next
    change stores it under this broker's id."""
    legacy = {"default": {}, "node": {"log.retention.ms": "7200000"}, "groups": {}}
    (tmp_path / DynamicConfigStore.FILE_NAME).write_text(json.dumps(legacy))
    config = BrokerConfig({"node.id": "3"})
    store = DynamicConfigStore(document_in(tmp_path), config)
    assert config.dynamic_node == {"log.retention.ms": "7200000"}

    await store.alter_group("billing", lambda _current: {SESSION_TIMEOUT: "50000"})
    assert saved(document_in(tmp_path))["nodes"] == {"3": {"log.retention.ms": "7200000"}}
    assert config.dynamic_node == {"log.retention.ms": "7200000"}


async def test_a_bad_document_from_elsewhere_is_logged_and_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    document = document_in(tmp_path)
    config = BrokerConfig({"node.id": "1"})
    store = DynamicConfigStore(document, config)
    await store.alter_broker(DEFAULT_ENTITY, setting("7200000"))
    await store.alter_group("billing", lambda _current: {SESSION_TIMEOUT: "50000"})

    with caplog.at_level(logging.ERROR):
        await document.replace(lambda _current: b"{not json")  # another broker's write, say
    assert "the new dynamic-configs.json cannot be read" in caplog.text
    assert config.dynamic_default == {"log.retention.ms": "7200000"}
    assert store.groups == {"billing": {SESSION_TIMEOUT: "50000"}}
    with pytest.raises(DocumentUnavailable, match="cannot be read"):
        await store.alter_broker(DEFAULT_ENTITY, setting("3600000"))  # overwriting would lose it

    caplog.clear()
    invalid = {"default": {"log.retention.ms": "soon"}, "groups": {"other": {SESSION_TIMEOUT: "60000"}}}
    with caplog.at_level(logging.ERROR):
        await document.replace(lambda _current: json.dumps(invalid).encode())
    assert "ignoring the dynamic broker configs in dynamic-configs.json" in caplog.text
    assert config.dynamic_default == {"log.retention.ms": "7200000"}, "the layers before stay in force"
    assert store.groups == {"other": {SESSION_TIMEOUT: "60000"}}, "the groups still apply"


async def test_a_document_that_cannot_be_written_changes_nothing(tmp_path: Path) -> None:
    document = document_in(tmp_path)
    config = BrokerConfig({"node.id": "1"})
    store = DynamicConfigStore(document, config)
    await store.alter_broker(DEFAULT_ENTITY, setting("7200000"))
    (tmp_path / f"{DynamicConfigStore.FILE_NAME}.tmp").mkdir()  # where the next write would go

    with pytest.raises(DocumentUnavailable, match="check the disk"):
        await store.alter_broker(DEFAULT_ENTITY, setting("3600000"))
    with pytest.raises(DocumentUnavailable):
        await store.alter_group("billing", lambda _current: {SESSION_TIMEOUT: "50000"})
    assert config.dynamic_default == {"log.retention.ms": "7200000"} and store.groups == {}
    assert saved(document)["default"] == {"log.retention.ms": "7200000"}


async def test_a_broker_applies_changes_and_answers_a_stuck_document_with_request_timed_out(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path) as (broker, port):
        assert broker.coordinator is not None
        await broker.dynamic_configs.alter_group("billing", lambda _current: {SESSION_TIMEOUT: "50000"})
        assert broker.coordinator.consumer.group_configs == {"billing": {SESSION_TIMEOUT: 50000}}

        (broker.data_dir / f"{DynamicConfigStore.FILE_NAME}.tmp").mkdir()
        change = {"name": "log.retention.ms", "config_operation": 0, "value": "3600000"}
        body = {
            "resources": [{"resource_type": 4, "resource_name": "", "configs": [change]}],
            "validate_only": False,
        }
        connection = await PeerConnection.open("127.0.0.1", port, "test-client", 1 << 20, 30)
        try:
            (answer,) = (await connection.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body))["responses"]
        finally:
            await connection.aclose()
        assert answer["error_code"] == ErrorCode.REQUEST_TIMED_OUT
        assert "check the disk" in answer["error_message"]
        assert broker.config.dynamic_default == {}
