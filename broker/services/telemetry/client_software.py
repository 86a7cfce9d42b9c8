"""What software each connected client said it is (ApiVersions v3+, KIP-511).

Kafka keeps ``ClientInformation`` on the connection; client metrics subscriptions match on it
(``client_software_name=apache-kafka-java``).  Odradek's request context carries only the
peer's address, so the ApiVersions handler records the name and version here by address.
The map is an LRU bounded by :data:`MAX_REMEMBERED` entries and :data:`MAX_REMEMBERED_BYTES`
(a name may take 32 KiB): connections are not told to it when they close, so a reused address
is simply overwritten by its next ApiVersions, and one that never sends ApiVersions v3 is
"unknown", as in Kafka.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

MAX_REMEMBERED = 65_536
MAX_REMEMBERED_BYTES = 16 << 20
_ENTRY_OVERHEAD = 256  # the entry's objects besides its strings
UNKNOWN = "unknown"  # Kafka's ClientInformation.UNKNOWN_NAME_OR_VERSION


class Software(NamedTuple):
    name: str
    version: str


def _cost(address: str, software: Software) -> int:
    return _ENTRY_OVERHEAD + len(address) + len(software.name) + len(software.version)


class ClientSoftware:
    """Client software by peer address (``ip:port``), most recently announced kept."""

    def __init__(self, capacity: int = MAX_REMEMBERED, capacity_bytes: int = MAX_REMEMBERED_BYTES) -> None:
        self._capacity = capacity
        self._capacity_bytes = capacity_bytes
        self._bytes = 0
        self._by_address: OrderedDict[str, Software] = OrderedDict()

    def announce(self, address: str, name: str | None, version: str | None) -> None:
        """Record what a connection's ApiVersions said (None: it did not say)."""
        software = Software(name or UNKNOWN, version or UNKNOWN)
        previous = self._by_address.pop(address, None)
        if previous is not None:
            self._bytes -= _cost(address, previous)
        self._by_address[address] = software
        self._bytes += _cost(address, software)
        while len(self._by_address) > self._capacity or self._bytes > self._capacity_bytes:
            oldest, forgotten = self._by_address.popitem(last=False)
            self._bytes -= _cost(oldest, forgotten)

    def of(self, address: str) -> Software:
        return self._by_address.get(address, Software(UNKNOWN, UNKNOWN))
