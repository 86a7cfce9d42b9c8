"""Where the ACLs live: ``acls.json`` in the data directory, replaced atomically and fsynced.

Kafka keeps ACLs in its metadata log; a single node needs only one small file.  Every change
is written (temporary file, fsync, rename, directory fsync, in a worker thread) before the
authorizer enforces it and before CreateAcls/DeleteAcls are answered, and changes are
serialized, so what was acknowledged is what the next start loads.  The total is bounded
(``authorizer.max.acls``) because every ACL costs memory and each lookup may weigh them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from broker.services.security.acl_model import AclBinding
from broker.services.security.authorizer import STANDARD_AUTHORIZER, Authorizer, parse_super_users
from log.checkpoint import write_atomically

if TYPE_CHECKING:
    from broker.config.config import BrokerConfig

ACL_FILE = "acls.json"
_FORMAT_VERSION = 1
_FIELDS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission")


def encode_acls(acls: list[AclBinding]) -> bytes:
    rows = [[getattr(acl, name) for name in _FIELDS] for acl in acls]
    return json.dumps({"version": _FORMAT_VERSION, "acls": rows}, separators=(",", ":")).encode()


def decode_acls(data: bytes) -> list[AclBinding]:
    """The stored ACLs; a file this version cannot read stops start-up rather than be ignored
    (ignoring it would silently drop DENY rules)."""
    document = json.loads(data)
    if document.get("version") != _FORMAT_VERSION:
        raise ValueError(f"unknown ACL file version {document.get('version')!r}")
    acls = [AclBinding.from_codes(*row) for row in document["acls"]]
    for acl in acls:
        if (error := acl.validation_error()) is not None:
            raise ValueError(f"invalid stored ACL {acl}: {error}")
    return acls


class AclStore:
    """The authorizer's ACLs and their file; every change goes through :meth:`update`."""

    def __init__(self, path: Path, authorizer: Authorizer, max_acls: int) -> None:
        self.path = path
        self.authorizer = authorizer
        self.max_acls = max_acls
        self._writing = trio.Lock()

    async def update(self, change: Callable[[list[AclBinding]], list[AclBinding]]) -> None:
        """Store ``change(current ACLs)``, then enforce it. Changes never interleave."""
        async with self._writing:
            acls = change(self.authorizer.acls)
            data = encode_acls(acls)
            await trio.to_thread.run_sync(write_atomically, os.fspath(self.path), data)
            self.authorizer.replace(acls)


def open_acl_store(config: BrokerConfig, data_dir: Path) -> AclStore | None:
    """The store when ``authorizer.class.name`` names the StandardAuthorizer; None when empty
    (no authorizer: everything is allowed and the ACL APIs answer SECURITY_DISABLED, as Kafka)."""
    class_name = (config.get("authorizer.class.name") or "").strip()
    if not class_name:
        return None
    if class_name != STANDARD_AUTHORIZER:
        raise SystemExit(
            f"authorizer.class.name={class_name} is not supported; Odradek has {STANDARD_AUTHORIZER}"
        )
    path = data_dir / ACL_FILE
    try:
        acls = decode_acls(path.read_bytes()) if path.exists() else []
    except (ValueError, TypeError, KeyError) as exc:
        raise SystemExit(
            f"{path} cannot be read ({exc}); restore it or remove it to start without ACLs"
        ) from None
    authorizer = Authorizer(
        parse_super_users(config.get("super.users")), config.get_bool("allow.everyone.if.no.acl.found"), acls
    )
    return AclStore(path, authorizer, config.get_int("authorizer.max.acls"))
