"""Failures a person looking at the console can act on, and how a broker's answer becomes one.

Three kinds matter to someone in front of a page: the broker cannot be reached (which address,
what to check), the console's principal lacks an ACL (which one), and the thing being viewed is
gone (a topic deleted while its page was open).  Everything else a broker refuses is shown with
Kafka's error name and message, as the other ``odradek`` commands show it.
"""

from __future__ import annotations

from typing import Any

from broker.cli.registry import check
from wire.error_codes import ErrorCode

AUTHORIZATION_FAILURES = {
    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}
GONE = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.GROUP_ID_NOT_FOUND}


class NotAuthorized(Exception):
    """The broker refused a request for lack of an ACL; ``acl`` names the one to add."""

    def __init__(self, action: str, code: ErrorCode, acl: str) -> None:
        super().__init__(f"{action} was refused: {code.name}")
        self.action, self.code, self.acl = action, code, acl


class Gone(Exception):
    """What the page shows no longer exists (deleted while viewed, or never existed)."""


def require(entry: dict[str, Any], action: str, acl: str, what: str = "") -> None:
    """Raise what a person can act on if ``entry`` carries an error code.

    ``acl`` is the ACL the request needs (``DESCRIBE on TOPIC orders``), named on an
    authorization failure; ``what`` names the viewed thing for a :class:`Gone` page.
    """
    code = entry.get("error_code", 0)
    if code in AUTHORIZATION_FAILURES:
        raise NotAuthorized(action, ErrorCode(code), acl)
    if code in GONE and what:
        raise Gone(f"{what} does not exist (any more): it may have been deleted while you looked at it.")
    check(entry, action)
