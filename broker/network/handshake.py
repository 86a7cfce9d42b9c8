"""Opening a connection's transport: nothing on plaintext, the TLS handshake on SSL listeners.

The handshake runs within ``authentication.timeout.ms``: a client that connects to a TLS
port and sends nothing, or plaintext bytes, is closed promptly (the latter fails the
handshake at its first record) and costs only its own connection.  On an ``SSL`` listener
with a client certificate, the certificate's subject is the principal.
"""

from __future__ import annotations

import logging
import ssl

import trio

from broker.network.transport import PlainTransport, TlsTransport, Transport
from broker.services.rate_limited_log import RateLimitedLog
from broker.services.security.authentication import ANONYMOUS, ConnectionAuth
from broker.services.security.listener_security import ListenerSecurity, SecurityProtocol
from broker.services.security.tls import subject_name

log = logging.getLogger(__name__)
_refused = RateLimitedLog(logging.INFO, log)


async def open_transport(
    sock: trio.socket.SocketType, security: ListenerSecurity, peer: str, host: str
) -> tuple[Transport, ConnectionAuth] | None:
    """The connection's transport and initial identity; None if it must be closed."""
    if security.tls is None:
        return PlainTransport(sock), ConnectionAuth(security, peer, host)
    stream = trio.SSLStream(trio.SocketStream(sock), security.tls, server_side=True)
    with trio.move_on_after(security.authentication_timeout_s) as timed_out:
        try:
            await stream.do_handshake()
        except (trio.BrokenResourceError, ssl.SSLError, OSError) as exc:
            cause = exc.__cause__ if isinstance(exc, trio.BrokenResourceError) and exc.__cause__ else exc
            _refused("TLS handshake with %s on listener %s failed: %s", peer, security.name, cause)
            return None
    if timed_out.cancelled_caught:
        _refused("TLS handshake with %s on listener %s timed out", peer, security.name)
        return None
    principal = ANONYMOUS
    certificate = stream.getpeercert()
    if certificate and security.protocol is SecurityProtocol.SSL and security.principal_mapper is not None:
        name = security.principal_mapper.principal(subject_name(certificate))
        if name is None:
            _refused("no ssl.principal.mapping.rules rule applies to %s's certificate; closing", peer)
            return None
        principal = f"User:{name}"
    return TlsTransport(sock, stream), ConnectionAuth(security, peer, host, principal)
