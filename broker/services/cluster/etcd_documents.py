"""A cluster's shared documents: one etcd key each, the same on every broker.

ACLs, SCRAM credentials, client quotas, client-metrics subscriptions and dynamic configs
(``broker/state/documents.py``) live under ``<prefix>shared/<file name>`` as the very bytes a
single node keeps in that file. Every broker reads them with the rest of the metadata (snapshot,
then the one watch over the root) and announces each new content to its store, so a change made
through any broker takes effect on every broker once its watch delivers it (on an idle local
cluster within milliseconds; ``docs/CLUSTER.md`` gives the measured bound).

A change is an etcd transaction conditioned on the ``mod_revision`` the writer read: two brokers
changing one document at once cannot overwrite each other; the one that lost reads the winner's
content and applies its change to that. It is answered once this broker's watch has delivered
it, so the next request here sees it. A broker cut off from etcd keeps enforcing the documents
it last saw (and its change requests time out), as a Kafka broker cut off from its controller
keeps its last metadata image.
"""

from __future__ import annotations

import logging

import trio

from broker.services.cluster.cluster_metadata import ClusterMetadata
from broker.services.cluster.etcd_client import Compare, EtcdError, Put
from broker.services.cluster.image import Change as MetadataChange
from broker.state.documents import Change, Document, DocumentUnavailable, Listener

log = logging.getLogger(__name__)

MAX_DOCUMENT_BYTES = 1 << 20
"""etcd refuses requests over ``--max-request-bytes`` (1.5 MiB by default); a document must fit."""
REPLACE_TIMEOUT_S = 15.0
"""How long a change may wait for etcd (and for this broker's watch to deliver it)."""


class EtcdDocument:
    """One shared document; its content is the metadata image's copy of its key."""

    def __init__(self, metadata: ClusterMetadata, name: str) -> None:
        self.name = name
        self._metadata = metadata
        self._key = metadata.layout.document(name)
        self._listeners: list[Listener] = []
        self._writing = trio.Lock()

    def current(self) -> bytes | None:
        found = self._metadata.image.documents.get(self.name)
        return None if found is None else found.record

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def announce(self) -> None:
        """Tell the listeners the image's content (the watch just delivered a change)."""
        content = self.current()
        for listener in self._listeners:
            listener(content)

    async def replace(self, change: Change) -> None:
        async with self._writing:
            try:
                with trio.fail_after(REPLACE_TIMEOUT_S):
                    while not await self._replace_once(change):
                        log.info(
                            "shared document %s changed meanwhile on another broker; applying again",
                            self.name,
                        )
            except trio.TooSlowError:
                raise DocumentUnavailable(
                    f"the cluster metadata (etcd) did not take the change to {self.name} within "
                    f"{REPLACE_TIMEOUT_S:.0f} s; check that etcd is reachable, then retry"
                ) from None

    async def _replace_once(self, change: Change) -> bool:
        """One conditional write; False when another broker's change came first (this broker's
        image has it by then)."""
        found = self._metadata.image.documents.get(self.name)
        content = change(None if found is None else found.record)
        if len(content) > MAX_DOCUMENT_BYTES:
            raise DocumentUnavailable(
                f"{self.name} would take {len(content)} bytes, more than the {MAX_DOCUMENT_BYTES} a "
                "cluster keeps in one etcd key; remove entries first"
            )
        revision = 0 if found is None else found.mod_revision  # 0: the key must still be absent
        try:
            result = await self._metadata.client.txn(
                [Compare.mod_revision(self._key, revision)], [Put(self._key, content)], []
            )
        except EtcdError as exc:
            raise DocumentUnavailable(
                f"the cluster metadata (etcd) did not take the change to {self.name} ({exc}); retry"
            ) from exc
        await self._metadata.caught_up(result.revision)
        return result.succeeded


class EtcdDocuments:
    """A cluster member's documents, announced to their stores as the watch delivers them."""

    def __init__(self, metadata: ClusterMetadata) -> None:
        self._metadata = metadata
        self._opened: dict[str, EtcdDocument] = {}
        metadata.subscribe(self._changed)

    def open(self, file_name: str, *, mode: int = 0o644) -> Document:
        """The shared document a single node keeps as ``file_name`` (``mode`` is for files)."""
        document = self._opened.get(file_name)
        if document is None:
            document = self._opened[file_name] = EtcdDocument(self._metadata, file_name)
        return document

    def _changed(self, change: MetadataChange) -> None:
        if change.kind != "document":
            return
        document = self._opened.get(str(change.name[0]))
        if document is not None:
            document.announce()
