"""Which API versions Odradek serves: the schema declarations, narrowed by each handler.

Clients negotiate from the ApiVersions ranges and some infer features from them (see
KAFKA-FACTS.md), so they must be honest: an API is advertised only when a handler for it is
installed, and only with versions whose codecs exist (``wire.schemas``) and that the handler
serves.  A handler module says so in its ``HANDLERS`` table with one :class:`Served` per API:
by default every declared version (the declarations start where Kafka 4 does, KIP-896);
``highest``, always with the reason, where a declared newer version is not served yet.

A handler may still refuse some advertised versions itself, as Kafka 4 does: it advertises
Produce from 0 but answers v0-2 with UNSUPPORTED_VERSION (old librdkafka builds enable
features only when they see that minimum).

Every API the schemas declare (all a Kafka broker serves) and Odradek does not serve is in
:data:`NOT_SERVED` with the reason, so a gap is a decision on record rather than an oversight
(``tests/broker/test_api_support.py`` holds the two lists together); a request for one closes
the connection, as for any API not advertised, and the log line says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from broker.requests.api_ranges import ApiSupport
from broker.requests.context import Handler
from wire.api_keys import ApiKey
from wire.schemas import ALL_APIS


@dataclass(frozen=True, slots=True)
class Served:
    """A handler, and the declared versions of its API it serves when that is not all."""

    handler: Handler
    highest: int | None = None
    why_not_newer: str = ""

    def __post_init__(self) -> None:
        if self.highest is not None and not self.why_not_newer:
            raise ValueError("a handler that serves fewer versions than declared must say why")


_RAFT_VOTERS = "KRaft controller quorum membership (KIP-853): Odradek has no KRaft quorum; cluster metadata lives in etcd"

NOT_SERVED: dict[ApiKey, str] = {
    ApiKey.ALTER_REPLICA_LOG_DIRS: (
        "JBOD log-dir moves (KIP-113): a replica stays in the log.dirs directory it was created in"
    ),
    ApiKey.UNREGISTER_BROKER: (
        "KRaft broker registrations: Odradek has no KRaft controller; a broker's record in etcd lives "
        "under its lease and vanishes once the broker stops heartbeating"
    ),
    ApiKey.ADD_RAFT_VOTER: _RAFT_VOTERS,
    ApiKey.REMOVE_RAFT_VOTER: _RAFT_VOTERS,
}
"""Why each API the schemas declare has no handler (a key in both tables is a test failure)."""


def supported_apis(served: Mapping[ApiKey, Served]) -> dict[ApiKey, ApiSupport]:
    """The advertised range of every API with a handler, by key, in key order."""
    supported: dict[ApiKey, ApiSupport] = {}
    for key in sorted(served):
        declared = ALL_APIS.get(key)
        if declared is None or declared.versions.high is None:
            raise ValueError(f"{key.api_name} has a handler but no closed range of declared versions")
        route = served[key]
        low = declared.versions.low
        high = declared.versions.high if route.highest is None else min(declared.versions.high, route.highest)
        if low > high:
            raise ValueError(f"{key.api_name}: no declared version is served ({low}-{high})")
        supported[key] = ApiSupport(key, low, high)
    return supported
