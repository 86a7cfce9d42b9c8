"""Where the ACLs live: the ``acls.json`` document (``broker.state.documents``).

Kafka keeps ACLs in its metadata log; a single node keeps them in one small file of its data
directory, a cluster in one etcd key every broker watches, so all enforce the same ACLs.  A
change is stored durably before the authorizer enforces it (once the document announces it)
and before CreateAcls/DeleteAcls are answered, and changes are serialized, so what was
acknowledged is what the next start loads.  The total is bounded (``authorizer.max.acls``)
because every ACL costs memory and each lookup may weigh them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from broker.services.security.acl_model import AclBinding
from broker.services.security.authorizer import STANDARD_AUTHORIZER, Authorizer, parse_super_users
from broker.state.documents import Document, DocumentUnavailable

if TYPE_CHECKING:
    from broker.config.config import BrokerConfig

log = logging.getLogger(__name__)

ACL_FILE = "acls.json"
_FORMAT_VERSION = 1
_FIELDS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission")


def encode_acls(acls: list[AclBinding]) -> bytes:
    rows = [[getattr(acl, name) for name in _FIELDS] for acl in acls]
    return json.dumps({"version": _FORMAT_VERSION, "acls": rows}, separators=(",", ":")).encode()


def decode_acls(data: bytes | None) -> list[AclBinding]:
    """The stored ACLs (None: none yet); content this version cannot read raises ValueError
    rather than be ignored (ignoring it would silently drop DENY rules)."""
    if data is None:
        return []
    try:
        document = json.loads(data)
        if document.get("version") != _FORMAT_VERSION:
            raise ValueError(f"unknown ACL file version {document.get('version')!r}")
        acls = [AclBinding.from_codes(*row) for row in document["acls"]]
        for acl in acls:
            if (error := acl.validation_error()) is not None:
                raise ValueError(f"invalid stored ACL {acl}: {error}")
    except (TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"malformed ACL document ({exc!r})") from exc
    return acls


class AclStore:
    """The authorizer's ACLs and their document; every change goes through :meth:`update`."""

    def __init__(self, document: Document, authorizer: Authorizer, max_acls: int) -> None:
        """Enforce the stored ACLs through ``authorizer``; raises ValueError when they cannot
        be read."""
        self.document = document
        self.authorizer = authorizer
        self.max_acls = max_acls
        authorizer.replace(decode_acls(document.current()))
        document.listen(self._adopt)

    async def update(self, change: Callable[[list[AclBinding]], list[AclBinding]]) -> None:
        """Store ``change(stored ACLs)``; it is enforced once stored. Changes never interleave,
        but ``change`` may run again (in a cluster, on another broker's newer ACLs)."""

        def rewrite(data: bytes | None) -> bytes:
            try:
                stored = decode_acls(data)
            except ValueError as exc:  # overwriting what cannot be read could drop DENY rules
                raise DocumentUnavailable(
                    f"the stored ACLs ({self.document.name}) cannot be read ({exc}); restore them, then retry"
                ) from exc
            return encode_acls(change(stored))

        await self.document.replace(rewrite)

    def _adopt(self, data: bytes | None) -> None:
        """Enforce the document's new ACLs; unreadable ones (another broker's) change nothing."""
        try:
            acls = decode_acls(data)
        except ValueError as exc:
            log.error(
                "the new %s cannot be read (%s); the ACLs read before stay in force", self.document.name, exc
            )
            return
        self.authorizer.replace(acls)


def open_acl_store(config: BrokerConfig, document: Document) -> AclStore | None:
    """The store when ``authorizer.class.name`` names the StandardAuthorizer; None when empty
    (no authorizer: everything is allowed and the ACL APIs answer SECURITY_DISABLED, as Kafka)."""
    class_name = (config.get("authorizer.class.name") or "").strip()
    if not class_name:
        return None
    if class_name != STANDARD_AUTHORIZER:
        raise SystemExit(
            f"authorizer.class.name={class_name} is not supported; Odradek has {STANDARD_AUTHORIZER}"
        )
    authorizer = Authorizer(
        parse_super_users(config.get("super.users")), config.get_bool("allow.everyone.if.no.acl.found")
    )
    try:
        return AclStore(document, authorizer, config.get_int("authorizer.max.acls"))
    except ValueError as exc:
        raise SystemExit(
            f"the stored ACLs ({document.name}) cannot be read ({exc}); restore them, or remove them "
            "to start without ACLs"
        ) from None
