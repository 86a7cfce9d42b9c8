"""The client metrics subscriptions of this broker, kept durably in its data directory.

Kafka keeps CLIENT_METRICS config resources in its metadata log; a single Odradek node keeps
them in ``<log.dir>/odradek-client-metrics.json``, replaced atomically (temporary file, fsync,
rename, directory fsync) on every change, so a crash leaves the old or the new set and an
acknowledged change survives a power cut.  The values are stored as the operator gave them
and parsed again at start-up.

Kafka bounds neither the number of subscriptions nor their size.  Here every change rewrites
the whole file and every new client instance is matched against every subscription, so both
are bounded (:data:`MAX_SUBSCRIPTIONS`, :data:`MAX_STORED_BYTES`); a change that would pass
them is refused with POLICY_VIOLATION and nothing is stored.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path

from broker.config.client_metrics_config import (
    ClientMetricsConfigError,
    Subscription,
    parse_subscription,
)
from log.checkpoint import write_atomically
from wire.error_codes import ErrorCode

log = logging.getLogger(__name__)

MAX_SUBSCRIPTIONS = 1024
"""Odradek-specific: each new client instance is matched against every subscription."""
MAX_STORED_BYTES = 1 << 20
"""Odradek-specific: the names and values stored (as JSON), all rewritten on each change."""


class SubscriptionStore:
    """Subscriptions by name: their values as given, and parsed for matching."""

    FILE_NAME = "odradek-client-metrics.json"

    def __init__(self, directory: Path) -> None:
        self._path = directory / self.FILE_NAME
        self._values: dict[str, dict[str, str]] = {}
        self._parsed: dict[str, Subscription] = {}
        self._stored_bytes = 0  # the entries' share of the file, kept as they change
        self.version = 0
        """Bumped on every change, so client instances know to match again (Kafka's
        ``subscriptionUpdateVersion``)."""
        if self._path.exists():
            document = json.loads(self._path.read_text(encoding="utf-8"))
            for name, values in document.get("subscriptions", {}).items():
                self._values[name] = dict(values)
                self._parsed[name] = parse_subscription(name, values)
                self._stored_bytes += _entry_bytes(name, values)

    def names(self) -> list[str]:
        return sorted(self._values)

    def values(self, name: str) -> dict[str, str]:
        """The keys set on ``name`` (empty for a subscription that does not exist)."""
        return dict(self._values.get(name, {}))

    def subscriptions(self) -> list[Subscription]:
        return list(self._parsed.values())

    def check(self, name: str, values: Mapping[str, str]) -> Subscription | None:
        """Validate ``values`` as the new content of ``name``; None when they remove it."""
        if not values:
            parse_subscription(name, values)  # still refuses an empty name
            return None
        subscription = parse_subscription(name, values)
        if name not in self._values and len(self._values) >= MAX_SUBSCRIPTIONS:
            raise ClientMetricsConfigError(
                ErrorCode.POLICY_VIOLATION,
                f"This broker keeps at most {MAX_SUBSCRIPTIONS} client metrics subscriptions "
                "(Odradek-specific); delete one first",
            )
        if self._stored_bytes_with(name, values) > MAX_STORED_BYTES:
            raise ClientMetricsConfigError(
                ErrorCode.POLICY_VIOLATION,
                f"Client metrics subscriptions would take more than {MAX_STORED_BYTES} bytes "
                "(Odradek-specific)",
            )
        return subscription

    def put(self, name: str, values: Mapping[str, str]) -> None:
        """Store ``values`` as ``name``'s keys (validated by :meth:`check`); none deletes it.

        The file is written first: a disk error leaves both it and this store as they were.
        """
        subscription = self.check(name, values)
        if subscription is None and name not in self._values:
            return
        stored = {key: value for key, value in self._values.items() if key != name}
        if subscription is not None:
            stored[name] = dict(values)
        write_atomically(str(self._path), self._document(stored))
        self._stored_bytes = self._stored_bytes_with(name, values)
        self._values = stored
        if subscription is None:
            del self._parsed[name]
            log.info("removed client metrics subscription %r", name)
        else:
            self._parsed[name] = subscription
            log.info("client metrics subscription %r is now %s", name, dict(values))
        self.version += 1

    def _stored_bytes_with(self, name: str, values: Mapping[str, str]) -> int:
        """The entries' bytes once ``name`` holds ``values`` (none: once it is gone)."""
        current = _entry_bytes(name, self._values[name]) if name in self._values else 0
        return self._stored_bytes - current + (_entry_bytes(name, values) if values else 0)

    @staticmethod
    def _document(values: Mapping[str, Mapping[str, str]]) -> bytes:
        return json.dumps({"version": 1, "subscriptions": values}, indent=1, sort_keys=True).encode()


def _entry_bytes(name: str, values: Mapping[str, str]) -> int:
    return len(json.dumps({name: values}).encode())
