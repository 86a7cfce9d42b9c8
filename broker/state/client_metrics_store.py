"""The client metrics subscriptions, kept durably in a document.

Kafka keeps CLIENT_METRICS config resources in its metadata log; Odradek keeps them in the
``odradek-client-metrics.json`` document (:mod:`broker.state.documents`): a file in a single
node's data directory, or one etcd key every broker of a cluster watches, so every broker offers
clients the same subscriptions.  The values are stored as the operator gave them and parsed
again wherever the document is read.

Kafka bounds neither the number of subscriptions nor their size.  Here every change rewrites
the whole document and every new client instance is matched against every subscription, so both
are bounded (:data:`MAX_SUBSCRIPTIONS`, :data:`MAX_STORED_BYTES`); a change that would pass
them is refused with POLICY_VIOLATION and nothing is stored.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from functools import partial

from broker.config.client_metrics_config import (
    ClientMetricsConfigError,
    Subscription,
    parse_subscription,
)
from broker.state.documents import Document, DocumentUnavailable
from wire.error_codes import ErrorCode

log = logging.getLogger(__name__)

MAX_SUBSCRIPTIONS = 1024
"""Odradek-specific: each new client instance is matched against every subscription."""
MAX_STORED_BYTES = 1 << 20
"""Odradek-specific: the document's size (it is rewritten whole on each change)."""

Values = dict[str, str]
Update = Callable[[Values], Values]
"""A subscription's new keys from its current ones (none: it is removed)."""


class SubscriptionStore:
    """Subscriptions by name: their values as given, and parsed for matching."""

    FILE_NAME = "odradek-client-metrics.json"

    def __init__(self, document: Document) -> None:
        self._document = document
        self._values: dict[str, Values] = {}
        self._parsed: dict[str, Subscription] = {}
        self.version = 0
        """Bumped on every change, so client instances know to match again (Kafka's
        ``subscriptionUpdateVersion``)."""
        self._adopt(document.current())
        document.listen(self._adopt)

    def names(self) -> list[str]:
        return sorted(self._values)

    def values(self, name: str) -> Values:
        """The keys set on ``name`` (empty for a subscription that does not exist)."""
        return dict(self._values.get(name, {}))

    def subscriptions(self) -> list[Subscription]:
        return list(self._parsed.values())

    async def alter(self, name: str, update: Update, *, validate_only: bool = False) -> None:
        """Store ``update`` of ``name``'s keys (checked as Kafka does, then by the bounds); it
        applies to the keys stored before it (in a cluster, maybe another broker's newer ones)."""
        change = partial(self._change, name, update)
        if validate_only:
            change(self._document.current())
        else:
            await self._document.replace(change)

    def _change(self, name: str, update: Update, current: bytes | None) -> bytes:
        try:
            stored = _decode(current)
        except ValueError as exc:  # overwriting what cannot be read would lose every subscription
            raise DocumentUnavailable(
                f"the stored client metrics subscriptions ({self._document.name}) cannot be read "
                f"({exc}); restore them, then retry"
            ) from exc
        values = update(stored.pop(name, {}))
        parse_subscription(name, values)  # also refuses an empty name when removing
        if values:
            if len(stored) >= MAX_SUBSCRIPTIONS:
                raise ClientMetricsConfigError(
                    ErrorCode.POLICY_VIOLATION,
                    f"This broker keeps at most {MAX_SUBSCRIPTIONS} client metrics subscriptions "
                    "(Odradek-specific); delete one first",
                )
            stored[name] = values
        encoded = _encode(stored)
        # A document already past the bound (an older Odradek counted only the entries) may shrink.
        if len(encoded) > max(MAX_STORED_BYTES, len(current or b"")):
            raise ClientMetricsConfigError(
                ErrorCode.POLICY_VIOLATION,
                f"Client metrics subscriptions would take more than {MAX_STORED_BYTES} bytes "
                "(Odradek-specific)",
            )
        return encoded

    def _adopt(self, content: bytes | None) -> None:
        """Offer the document's subscriptions; content that cannot be read or holds one Kafka
        would refuse (another broker's, a hand-edited file) changes nothing."""
        try:
            stored = _decode(content)
            parsed = {  # an unchanged subscription keeps its compiled patterns
                name: self._parsed[name]
                if self._values.get(name) == values
                else parse_subscription(name, values)
                for name, values in stored.items()
            }
        except (ValueError, ClientMetricsConfigError) as exc:
            log.error(
                "the new %s cannot be used (%s); the client metrics subscriptions read before stay",
                self._document.name,
                exc,
            )
            return
        changed = sorted(
            name for name in stored.keys() | self._values.keys() if stored.get(name) != self._values.get(name)
        )
        if not changed:
            return
        for name in changed:
            if name in stored:
                log.info("client metrics subscription %r is now %s", name, stored[name])
            else:
                log.info("removed client metrics subscription %r", name)
        self._values, self._parsed = stored, parsed
        self.version += 1


def _decode(content: bytes | None) -> dict[str, Values]:
    """The stored subscriptions (None: none yet); malformed content raises ValueError."""
    if content is None:
        return {}
    document = json.loads(content)
    subscriptions = document.get("subscriptions", {}) if isinstance(document, dict) else None
    if not isinstance(subscriptions, dict):
        raise ValueError("no object of subscriptions")
    for name, values in subscriptions.items():
        if not isinstance(values, dict) or not all(isinstance(value, str) for value in values.values()):
            raise ValueError(f"subscription {name!r} is not an object of strings")
    return subscriptions


def _encode(subscriptions: Mapping[str, Values]) -> bytes:
    return json.dumps({"version": 1, "subscriptions": subscriptions}, indent=1, sort_keys=True).encode()
