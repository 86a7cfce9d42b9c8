"""The ACL, SCRAM credential and client quota stores keep their state in a document.

Two stores over one :class:`FileDocument` stand for two brokers sharing one etcd key: each
adopts only what the document announces, so a change through one reaches the other, content
it cannot read (another broker's) leaves it as it was, and a change that cannot be stored
changes neither.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Protocol

import pytest
import trio

from broker.services.quotas.quota_manager import ClientQuotas
from broker.services.quotas.quota_rate import Windows
from broker.services.security.acl_model import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from broker.services.security.acl_store import ACL_FILE, AclStore
from broker.services.security.authorizer import Authorizer
from broker.services.security.scram import ScramCredential
from broker.services.security.scram_store import ScramCredentialStore
from broker.state.documents import DocumentUnavailable, FileDocument
from broker.state.quota_store import PRODUCER_BYTE_RATE, USER, Alteration, QuotaStore


class Kind(Protocol):
    """One store as these tests drive it: each change adds a name, the state is the names."""

    file_name: str

    def open(self, document: FileDocument) -> object: ...

    async def add(self, store: object, name: str) -> None: ...

    def names(self, store: object) -> set[str]: ...


class Acls:
    file_name = ACL_FILE

    def open(self, document: FileDocument) -> AclStore:
        return AclStore(document, Authorizer(frozenset(), allow_if_no_acl=False), max_acls=100)

    async def add(self, store: object, name: str) -> None:
        assert isinstance(store, AclStore)
        acl = AclBinding(
            ResourceType.TOPIC,
            name,
            PatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )
        await store.update(lambda acls: [*acls, acl])

    def names(self, store: object) -> set[str]:
        assert isinstance(store, AclStore)
        return {acl.resource_name for acl in store.authorizer.acls}


class Credentials:
    file_name = ScramCredentialStore.FILE_NAME

    def open(self, document: FileDocument) -> ScramCredentialStore:
        return ScramCredentialStore(document)

    async def add(self, store: object, name: str) -> None:
        assert isinstance(store, ScramCredentialStore)
        credential = ScramCredential.from_salted_password("SCRAM-SHA-256", b"salt", b"p" * 32, 4096)
        await store.apply({(name, "SCRAM-SHA-256"): credential}, set())

    def names(self, store: object) -> set[str]:
        assert isinstance(store, ScramCredentialStore)
        return set(store.users())


class Quotas:
    file_name = QuotaStore.FILE_NAME

    def open(self, document: FileDocument) -> ClientQuotas:
        return ClientQuotas(QuotaStore(document), Windows(samples=11, size_ms=1000), lambda: 0)

    async def add(self, store: object, name: str) -> None:
        assert isinstance(store, ClientQuotas)
        await store.store.apply([Alteration(((USER, name),), {PRODUCER_BYTE_RATE: 1000.0})])

    def names(self, store: object) -> set[str]:
        assert isinstance(store, ClientQuotas)
        return {name for entity, _ in store.store.describe([], strict=False) for _, name in entity if name}


KINDS = pytest.mark.parametrize("kind", [Acls(), Credentials(), Quotas()], ids=["acl", "scram", "quota"])


@KINDS
def test_a_change_through_one_store_is_adopted_by_another_on_the_same_document(
    kind: Kind, tmp_path: Path
) -> None:
    document = FileDocument(tmp_path / kind.file_name)
    here, there = kind.open(document), kind.open(document)
    trio.run(kind.add, here, "a")
    trio.run(kind.add, there, "b")  # applied to what ``here`` stored, not to an empty state
    assert kind.names(here) == kind.names(there) == {"a", "b"}
    assert kind.names(kind.open(FileDocument(tmp_path / kind.file_name))) == {"a", "b"}  # a restart


@KINDS
def test_a_document_another_broker_garbled_is_logged_and_ignored(
    kind: Kind, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    document = FileDocument(tmp_path / kind.file_name)
    store = kind.open(document)
    trio.run(kind.add, store, "a")
    for garbage in (b"{not json", b"[1, 2]", b'{"version": 1, "acls": 3, "users": 3, "entities": 3}'):
        with caplog.at_level(logging.ERROR):
            trio.run(document.replace, lambda _, garbage=garbage: garbage)
        assert kind.names(store) == {"a"}
        assert [r.levelno for r in caplog.records] == [logging.ERROR]
        assert "cannot be read" in caplog.text
        caplog.clear()
    with pytest.raises(DocumentUnavailable, match="cannot be read"):  # not overwritten
        trio.run(kind.add, store, "b")
    assert document.current() == b'{"version": 1, "acls": 3, "users": 3, "entities": 3}'


@KINDS
def test_a_change_that_cannot_be_stored_changes_nothing(kind: Kind, tmp_path: Path) -> None:
    document = FileDocument(tmp_path / kind.file_name)
    here, there = kind.open(document), kind.open(document)
    trio.run(kind.add, here, "a")
    stored = document.path.read_bytes()
    (tmp_path / f"{kind.file_name}.tmp").mkdir()  # where the new content would be written first
    with pytest.raises(DocumentUnavailable, match="cannot be written"):
        trio.run(kind.add, here, "b")
    assert kind.names(here) == kind.names(there) == {"a"}
    assert document.path.read_bytes() == stored


def test_quotas_another_broker_sets_are_enforced_here(tmp_path: Path) -> None:
    """What the manager derives from the quotas (the keys on, the limits looked up) follows a
    change that came through another store; the version moves only when the quotas do."""
    document = FileDocument(tmp_path / QuotaStore.FILE_NAME)
    here, there = Quotas().open(document), Quotas().open(document)
    assert here.limit(PRODUCER_BYTE_RATE, "alice", "app") is None  # now cached
    trio.run(Quotas().add, there, "alice")
    assert here.enabled == {PRODUCER_BYTE_RATE}
    assert here.limit(PRODUCER_BYTE_RATE, "alice", "app") == (("alice", ""), 1000.0)
    assert here.store.version == 1
    trio.run(document.replace, lambda current: current or b"")  # the same quotas again
    assert here.store.version == 1
