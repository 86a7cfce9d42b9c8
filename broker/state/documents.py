"""Documents: the small pieces of state a broker keeps whole and replaces whole.

ACLs, SCRAM credentials, client quotas, client-metrics subscriptions and dynamic configs are
each one document (a few bytes to a few MiB of JSON) that a change rewrites entirely. Kafka keeps
them in its metadata log, so every broker of a cluster enforces the same ones; Odradek keeps each
in one place chosen by the node's mode:

- a single node: a file in its data directory, replaced atomically (:class:`FileDocument`);
- a cluster member: one etcd key shared by every broker and watched by each
  (``broker/services/cluster/etcd_documents.py``).

The stores above (``AclStore``, ``ScramCredentialStore``, ``QuotaStore``, ``SubscriptionStore``,
``DynamicConfigStore``) see only this interface. A store never changes its in-memory state
itself: it asks :meth:`Document.replace` to store ``change(current bytes)`` and adopts whatever
the document announces to its listener, for its own changes and another broker's alike, so all
brokers go through the same sequence of states in the same order. The bytes are the same in
both modes, which is what lets ``odradek cluster-import`` carry a node's files into a cluster.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import trio

from log.checkpoint import write_atomically

Listener = Callable[[bytes | None], None]
"""Called with a document's new content (None: it was deleted or never written)."""
Change = Callable[[bytes | None], bytes]
"""The new content from the current one; it may raise to refuse the change (nothing is stored)."""


class DocumentUnavailable(Exception):
    """The change could not be stored: its place cannot be reached, or it is too large for it.
    Nothing changed; the message says what to do."""


class Document(Protocol):
    """One document: its current content, a way to replace it, and change announcements."""

    name: str

    def current(self) -> bytes | None:
        """The content last stored or announced (None: none yet)."""
        ...

    def listen(self, listener: Listener) -> None:
        """Announce every later change to ``listener``, this node's and others' alike."""
        ...

    async def replace(self, change: Change) -> None:
        """Store ``change(current)`` durably and return once the listeners have adopted it.

        Changes never interleave: ``change`` sees the content the stored one replaces (in a
        cluster it may run again when another broker's change came first). Raises
        :class:`DocumentUnavailable`, or what ``change`` raised, with nothing stored."""
        ...


class FileDocument:
    """A document in a file of the data directory (a single node).

    Each change is written to a temporary file, fsynced, renamed over the old one and the
    directory fsynced (in a worker thread, so a large document does not stall the event loop)
    before any listener hears of it: what was acknowledged is what the next start reads.
    """

    def __init__(self, path: Path, *, mode: int = 0o644) -> None:
        self.name = path.name
        self.path = path
        self._mode = mode
        self._content = path.read_bytes() if path.exists() else None
        self._listeners: list[Listener] = []
        self._writing = trio.Lock()

    def current(self) -> bytes | None:
        return self._content

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    async def replace(self, change: Change) -> None:
        async with self._writing:
            content = change(self._content)
            try:
                await trio.to_thread.run_sync(
                    lambda: write_atomically(os.fspath(self.path), content, mode=self._mode)
                )
            except OSError as exc:
                raise DocumentUnavailable(f"{self.path} cannot be written ({exc}); check the disk") from exc
            self._content = content
            for listener in self._listeners:
                listener(content)


class Documents(Protocol):
    """Where a node's documents live: :class:`DataDirectory` or a cluster's etcd."""

    def open(self, file_name: str, *, mode: int = 0o644) -> Document:
        """The document a single node keeps as ``file_name`` in its data directory."""
        ...


class DataDirectory:
    """A single node's documents: files in its data directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def open(self, file_name: str, *, mode: int = 0o644) -> Document:
        return FileDocument(self.directory / file_name, mode=mode)
