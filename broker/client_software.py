"""What software each connected client said it is (ApiVersions v3+, KIP-511).

Kafka keeps ``ClientInformation`` on the connection; client metrics subscriptions match on it
(``client_software_name=apache-kafka-java``).  Odradek's request context carries only the
peer's address, so the ApiVersions handler records the name and version here by address.
The map is an LRU bounded by :data:`MAX_REMEMBERED`: connections are not told to it when
they close, so a reused address is simply overwritten by its next ApiVersions, and one that
never sends ApiVersions v3 is "unknown", as in Kafka.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

MAX_REMEMBERED = 65_536
UNKNOWN = "unknown"  # Kafka's ClientInformation.UNKNOWN_NAME_OR_VERSION


class Software(NamedTuple):
    name: str
    version: str


class ClientSoftware:
    """Client software by peer address (``ip:port``), most recently announced kept."""

    def __init__(self, capacity: int = MAX_REMEMBERED) -> None:
        self._capacity = capacity
        self._by_address: OrderedDict[str, Software] = OrderedDict()

    def announce(self, address: str, name: str | None, version: str | None) -> None:
        """Record what a connection's ApiVersions said (None: it did not say)."""
        self._by_address[address] = Software(name or UNKNOWN, version or UNKNOWN)
        self._by_address.move_to_end(address)
        while len(self._by_address) > self._capacity:
            self._by_address.popitem(last=False)

    def of(self, address: str) -> Software:
        return self._by_address.get(address, Software(UNKNOWN, UNKNOWN))
