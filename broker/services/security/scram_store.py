"""SCRAM credentials, kept in the ``scram-credentials.json`` document (``broker.state.documents``).

Kafka keeps them in its metadata log; a single node keeps them in one small file of its data
directory (mode 0600), a cluster in one etcd key every broker watches, so a user can log in
through any broker.  A change is stored durably before it takes effect and before
AlterUserScramCredentials is answered.  Only salts, iteration counts and the derived keys are
stored, never passwords.
"""

from __future__ import annotations

import base64
import json
import logging

from broker.services.security.scram import HASHES, ScramCredential
from broker.state.documents import Document, DocumentUnavailable

log = logging.getLogger(__name__)

MAX_USERS = 100_000  # a bound on what AlterUserScramCredentials can make the broker hold

Users = dict[str, dict[str, ScramCredential]]
"""user -> mechanism -> credential."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def encode_credentials(users: Users) -> bytes:
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
    return json.dumps(document, indent=1, sort_keys=True).encode()


def decode_credentials(data: bytes | None) -> Users:
    """The stored credentials (None: none yet), without mechanisms this broker does not know;
    malformed content raises ValueError."""
    if data is None:
        return {}
    try:
        return {
            user: {
                mechanism: ScramCredential(
                    base64.b64decode(entry["salt"]),
                    int(entry["iterations"]),
                    base64.b64decode(entry["stored_key"]),
                    base64.b64decode(entry["server_key"]),
                )
                for mechanism, entry in mechanisms.items()
                if mechanism in HASHES
            }
            for user, mechanisms in json.loads(data)["users"].items()
        }
    except (TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"malformed SCRAM credentials ({exc!r})") from exc


class ScramCredentialStore:
    """The credentials users log in with; every change goes through :meth:`apply`."""

    FILE_NAME = "scram-credentials.json"
    FILE_MODE = 0o600  # the derived keys let whoever reads them impersonate the server

    def __init__(self, document: Document) -> None:
        self._document = document
        self._users = decode_credentials(document.current())
        document.listen(self._adopt)

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> Users:
        return self._users

    @property
    def full(self) -> bool:
        return len(self._users) >= MAX_USERS

    async def apply(
        self, upserts: dict[tuple[str, str], ScramCredential], deletions: set[tuple[str, str]]
    ) -> None:
        """Store a request's changes together; they take effect once stored, all at once.
        Changes never interleave, and each applies to the credentials stored before it (in a
        cluster, maybe another broker's newer ones)."""

        def change(data: bytes | None) -> bytes:
            try:
                updated = decode_credentials(data)
            except ValueError as exc:  # overwriting what cannot be read would lose every user
                raise DocumentUnavailable(
                    f"the stored SCRAM credentials ({self._document.name}) cannot be read ({exc}); "
                    "restore them, then retry"
                ) from exc
            for user, mechanism in deletions:
                mechanisms = updated.get(user, {})
                mechanisms.pop(mechanism, None)
                if not mechanisms:
                    updated.pop(user, None)
            for (user, mechanism), credential in upserts.items():
                updated.setdefault(user, {})[mechanism] = credential
            return encode_credentials(updated)

        await self._document.replace(change)

    def _adopt(self, data: bytes | None) -> None:
        """Take the document's new credentials in one assignment, so lookups never see half a
        request; unreadable ones (another broker's) change nothing."""
        try:
            self._users = decode_credentials(data)
        except ValueError as exc:
            log.error(
                "the new %s cannot be read (%s); the credentials read before stay in force",
                self._document.name,
                exc,
            )
