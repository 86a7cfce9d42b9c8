"""SCRAM credentials kept durably in the data directory (``scram-credentials.json``, mode 0600).

Kafka keeps them in its metadata log; a single node keeps them in one small file replaced
atomically (write, fsync, rename, directory fsync), so an acknowledged AlterUserScramCredentials
survives a crash and a torn write is never read.  Only salts, iteration counts and the derived
keys are stored, never passwords.
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import trio

from broker.services.security.scram import HASHES, ScramCredential
from log.checkpoint import write_atomically

log = logging.getLogger(__name__)

FILE_NAME = "scram-credentials.json"
MAX_USERS = 100_000  # a bound on what AlterUserScramCredentials can make the broker hold


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class ScramCredentialStore:
    """user -> mechanism -> credential, persisted on every change."""

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / FILE_NAME
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self._writing = trio.Lock()
        if self._path.exists():
            self._load()

    def _load(self) -> None:
        document = json.loads(self._path.read_text(encoding="utf-8"))
        for user, mechanisms in document["users"].items():
            self._users[user] = {
                mechanism: ScramCredential(
                    base64.b64decode(entry["salt"]),
                    int(entry["iterations"]),
                    base64.b64decode(entry["stored_key"]),
                    base64.b64decode(entry["server_key"]),
                )
                for mechanism, entry in mechanisms.items()
                if mechanism in HASHES
            }

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return self._users

    @property
    def full(self) -> bool:
        return len(self._users) >= MAX_USERS

    async def apply(
        self, upserts: dict[tuple[str, str], ScramCredential], deletions: set[tuple[str, str]]
    ) -> None:
        """Apply a request's changes together, persisted before they take effect.

        The file is written in a worker thread (an fsync of up to ``MAX_USERS`` entries must not
        stall every connection), one change at a time; the new table replaces the old in one
        assignment once it is on disk, so lookups never see a half-applied request.
        """
        async with self._writing:
            updated = {user: dict(mechanisms) for user, mechanisms in self._users.items()}
            for user, mechanism in deletions:
                mechanisms = updated.get(user, {})
                mechanisms.pop(mechanism, None)
                if not mechanisms:
                    updated.pop(user, None)
            for (user, mechanism), credential in upserts.items():
                updated.setdefault(user, {})[mechanism] = credential
            await trio.to_thread.run_sync(self._save, updated)
            self._users = updated

    def _save(self, users: dict[str, dict[str, ScramCredential]]) -> None:
        document = {
            "version": 1,
            "users": {
                user: {
                    mechanism: {
                        "salt": _b64(c.salt),
                        "iterations": c.iterations,
                        "stored_key": _b64(c.stored_key),
                        "server_key": _b64(c.server_key),
                    }
                    for mechanism, c in mechanisms.items()
                }
                for user, mechanisms in users.items()
            },
        }
        write_atomically(str(self._path), json.dumps(document, indent=1, sort_keys=True).encode(), mode=0o600)
