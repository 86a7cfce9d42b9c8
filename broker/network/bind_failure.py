"""What ``odradek serve`` says when a listener cannot bind its port.

Binding happens inside trio nurseries, so the plain ``OSError`` used to reach the terminal as
36 lines of nested exception groups for what is one fact ("the port is taken"). Listeners raise
``BindFailure`` instead, whose text is the whole message: Kafka's ("Socket server failed to bind
to 0.0.0.0:9092: Address already in use") plus what to do about it, and the CLI prints just that.
"""

from __future__ import annotations

import errno

from broker.config.config import host_and_port

_REMEDIES = {
    errno.EADDRINUSE: "stop the process that uses the port, or choose another port with {option}",
    errno.EACCES: "ports below 1024 need root or CAP_NET_BIND_SERVICE; choose another port with {option}",
    errno.EADDRNOTAVAIL: "that host is not an address of this machine; choose another with {option}",
}
_OTHERWISE = "check the host and port given with {option}"


class BindFailure(OSError):
    """A listener could not bind; ``str()`` is the one line for the operator."""

    def __str__(self) -> str:
        return str(self.strerror)


def bind_failure(what: str, host: str, port: int, error: OSError, option: str) -> BindFailure:
    """The failure of ``what`` (e.g. "Socket server") to bind ``host:port`` with ``error``,
    with the remedy for its errno; ``option`` names where the address is configured."""
    address = host_and_port(host or "0.0.0.0", port)
    reason = error.strerror or str(error)
    remedy = _REMEDIES.get(error.errno or 0, _OTHERWISE).format(option=option)
    return BindFailure(error.errno, f"{what} failed to bind to {address}: {reason}. To fix: {remedy}.")
