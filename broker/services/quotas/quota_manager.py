"""Which quota applies to a request and how long its client is throttled (``ClientQuotaManager``).

For a (user, client-id) pair the most specific entity holding the quota's key applies, in the
order Kafka documents::

    /config/users/<user>/clients/<client-id>
    /config/users/<user>/clients/<default>
    /config/users/<user>
    /config/users/<default>/clients/<client-id>
    /config/users/<default>/clients/<default>
    /config/users/<default>
    /config/clients/<client-id>
    /config/clients/<default>

and usage is counted per what that entity names, as Kafka's metric tags: a user quota is
shared by all of the user's client ids, a client-id quota by every user of that id.  The user
is the principal's name (``ANONYMOUS`` on PLAINTEXT listeners, which default user quotas
cover too).  Usage expires least recently used first past :data:`MAX_SENSORS` (Kafka expires
idle sensors after an hour).  Windowed rates and ``controller_mutation_rate``'s token buckets
are kept in two tables, so each use gets the kind it counts with.

With no quota of a key configured, nothing is recorded: ``enabled`` is the one check on the
request path.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

from broker.services.quotas.quota_rate import Rate, TokenBucket, Windows
from broker.state.quota_store import (
    CLIENT_ID,
    CONNECTION_CREATION_RATE,
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    IP,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    Entity,
    QuotaStore,
)

MAX_SENSORS = 100_000
"""Odradek-specific: (key, user, client-id) rates tracked at once, and as many mutation buckets."""

Tags = tuple[str, str]  # (user, client-id) as the quota counts them; "" where it does not

_K = TypeVar("_K", bound=Hashable)
_U = TypeVar("_U", Rate, TokenBucket)


def user_of(principal: str) -> str:
    """Kafka's principal name: ``User:alice`` -> ``alice``."""
    return principal.partition(":")[2]


def _used(table: OrderedDict[_K, _U], key: _K, kind: type[_U], windows: Windows, now_ms: int) -> _U:
    """The usage ``table`` keeps under ``key``, started now if new; the least recently used
    goes past :data:`MAX_SENSORS`, so idle clients do not pile up."""
    usage = table.get(key)
    if usage is None:
        usage = table[key] = kind(windows, now_ms)
        if len(table) > MAX_SENSORS:
            table.popitem(last=False)
    else:
        table.move_to_end(key)
    return usage


def _precedence(user: str, client: str) -> list[tuple[Entity, Tags]]:
    both = (user, client)
    return [
        (((CLIENT_ID, client), (USER, user)), both),
        (((CLIENT_ID, None), (USER, user)), both),
        (((USER, user),), (user, "")),
        (((CLIENT_ID, client), (USER, None)), both),
        (((CLIENT_ID, None), (USER, None)), both),
        (((USER, None),), (user, "")),
        (((CLIENT_ID, client),), ("", client)),
        (((CLIENT_ID, None),), ("", client)),
    ]


class ClientQuotas:
    """The broker's quotas (``store``) and every client's usage against them."""

    def __init__(self, store: QuotaStore, windows: Windows, clock: Callable[[], int]) -> None:
        self.store, self.windows, self.clock = store, windows, clock
        self._rates: OrderedDict[tuple[str, Tags], Rate] = OrderedDict()
        self._buckets: OrderedDict[Tags, TokenBucket] = OrderedDict()  # controller_mutation_rate
        self._limits: dict[tuple[str, str, str], tuple[Tags, float] | None] = {}
        self.enabled: frozenset[str] = frozenset()
        self._refresh()
        store.on_change.append(self._refresh)

    def _refresh(self) -> None:
        """Enforce the store's quotas from now on (they may have changed through another broker):
        the keys they hold, and no limit looked up under the ones before."""
        self._limits.clear()
        self.enabled = self.store.keys()

    def limit(self, key: str, user: str, client: str) -> tuple[Tags, float] | None:
        """The quota on ``key`` for this client and what its usage is counted under."""
        cache_key = (key, user, client)
        try:
            return self._limits[cache_key]
        except KeyError:
            pass
        found = None
        for entity, tags in _precedence(user, client if client else ""):
            bound = self.store.value(entity, key)
            if bound is not None:
                found = (tags, bound)
                break
        if len(self._limits) >= MAX_SENSORS:
            self._limits.clear()
        self._limits[cache_key] = found
        return found

    def record(self, key: str, principal: str, client: str, value: float) -> int:
        """Count ``value`` against the client's quota on ``key``; the throttle time in ms."""
        if key not in self.enabled:
            return 0
        found = self.limit(key, user_of(principal), client)
        if found is None:
            return 0
        tags, bound = found
        now_ms = self.clock()
        rate = _used(self._rates, (key, tags), Rate, self.windows, now_ms)
        rate.record(value, now_ms)
        return rate.throttle_ms(bound, now_ms)

    def unrecord(self, key: str, principal: str, client: str, value: float) -> None:
        """Take back what a throttled Fetch recorded: it answers with no data."""
        self.record(key, principal, client, -value)

    def max_in_window(self, key: str, principal: str, client: str) -> float | None:
        """The most one request may take without surely being throttled (Kafka's
        ``maxValueInQuotaWindow``: the bound over all but the current window); None: no quota."""
        if key not in self.enabled:
            return None
        found = self.limit(key, user_of(principal), client)
        if found is None:
            return None
        return found[1] * (self.windows.samples - 1) * self.windows.size_ms / 1000

    def mutate(self, principal: str, client: str, partitions: int, strict: bool) -> tuple[bool, int]:
        """Count partitions a topic request creates or deletes against ``controller_mutation_rate``
        (Kafka's Strict/PermissiveControllerMutationQuota, KIP-599): (allowed, throttle ms).

        Strict: refused while the quota is already exceeded (one request may take it from within
        to past the bound, throttled from the next).  Permissive: always counted, only throttled.
        """
        if CONTROLLER_MUTATION_RATE not in self.enabled:
            return True, 0
        found = self.limit(CONTROLLER_MUTATION_RATE, user_of(principal), client)
        if found is None:
            return True, 0
        tags, bound = found
        now_ms = self.clock()
        bucket = _used(self._buckets, tags, TokenBucket, self.windows, now_ms)
        if strict:
            over = bucket.throttle_ms(bound, now_ms)
            if over:
                return False, over
            bucket.record(partitions, bound, now_ms)
            return True, 0
        bucket.record(partitions, bound, now_ms)
        return True, bucket.throttle_ms(bound, now_ms)

    def connection(self, ip: str) -> int:
        """Count a new connection from ``ip`` against its ``connection_creation_rate`` (the ip's
        own entity, else the default ip entity); > 0: refuse it, closing it after that many ms.

        As Kafka's ConnectionQuotas: throttled at most one window, and a refused connection is
        not counted.
        """
        if CONNECTION_CREATION_RATE not in self.enabled:
            return 0
        bound = self.store.value(((IP, ip),), CONNECTION_CREATION_RATE)
        if bound is None:
            bound = self.store.value(((IP, None),), CONNECTION_CREATION_RATE)
        if bound is None:
            return 0
        now_ms = self.clock()
        rate = _used(self._rates, (CONNECTION_CREATION_RATE, (ip, "")), Rate, self.windows, now_ms)
        rate.record(1, now_ms)
        throttle = min(rate.throttle_ms(bound, now_ms), self.windows.size_ms)
        if throttle:
            rate.record(-1, now_ms)
        return throttle

    def produce(self, principal: str, client: str, request_bytes: int) -> int:
        return self.record(PRODUCER_BYTE_RATE, principal, client, request_bytes)

    def fetch(self, principal: str, client: str, response_bytes: int) -> int:
        return self.record(CONSUMER_BYTE_RATE, principal, client, response_bytes)

    def request_time(self, principal: str, client: str, seconds: float) -> int:
        """Count handling time against ``request_percentage`` (a percentage of one thread's
        time per second, as Kafka's request quota); throttled at most one window, as Kafka."""
        throttle = self.record(REQUEST_PERCENTAGE, principal, client, seconds * 100)
        return min(throttle, self.windows.size_ms)
