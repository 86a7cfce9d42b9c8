"""A connection's SASL state, as Kafka's ``SaslServerAuthenticator`` keeps it.

Until a SASL listener's client has authenticated, only ApiVersions, SaslHandshake and then
SaslAuthenticate are served; anything else closes the connection (Kafka: "Unexpected Kafka
request of type ... during SASL handshake").  SaslHandshake v0 switches to raw tokens (each
frame one SASL token, answered by a bare size-prefixed token); v1 carries tokens in
SaslAuthenticate.  A failed authentication is answered with SASL_AUTHENTICATION_FAILED and
the connection closed.  With ``connections.max.reauth.ms`` (KIP-368) a session expires: the
client re-authenticates on the same connection (same principal), or its next request closes it.
A token's expiry is compared with the broker's clock (``ListenerSecurity.clock``, ``log.clock``);
the session's end is then kept on trio's clock, as every other timeout.
"""

from __future__ import annotations

import logging

import trio

from broker.services.rate_limited_log import RateLimitedLog
from broker.services.security.listener_security import ListenerSecurity
from broker.services.security.mechanism import AuthenticationFailed, SaslServer
from wire.api_keys import ApiKey, api_name

log = logging.getLogger(__name__)

ANONYMOUS = "User:ANONYMOUS"
"""Kafka's principal for a connection nobody authenticated (every PLAINTEXT client)."""

_BEFORE_AUTHENTICATION = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE})
_warn_failure = RateLimitedLog(logging.WARNING, log)


def _dotted(principal: str) -> str:
    """``User:alice`` as Kafka's re-authentication messages print it (``User.alice``)."""
    return principal.replace(":", ".", 1)


class AuthenticationError(Exception):
    """A client broke the SASL sequence or failed to authenticate: close its connection."""


class ConnectionAuth:
    """Who a connection is and what it may send next."""

    __slots__ = (
        "security",
        "peer",
        "host",
        "principal",
        "gated",
        "authenticated",
        "server",
        "raw_tokens",
        "expires_at",
        "failed",
        "mechanism",
    )

    def __init__(
        self, security: ListenerSecurity, peer: str, host: str, tls_principal: str = ANONYMOUS
    ) -> None:
        self.security, self.peer, self.host = security, peer, host
        self.principal = tls_principal
        self.gated = security.protocol.uses_sasl  # False: every request is served, nothing to check
        self.authenticated = not self.gated
        self.server: SaslServer | None = None  # the exchange in progress
        self.raw_tokens = False  # after SaslHandshake v0, frames are bare SASL tokens
        self.expires_at: float | None = None  # trio time the session ends (KIP-368)
        self.failed = False  # answer this last response, then close
        self.mechanism: str | None = None  # of the current session (re-authentication keeps it)

    def check_request(self, api_key: int) -> None:
        """Raise AuthenticationError unless a request of ``api_key`` may be served now."""
        if self.failed:
            raise AuthenticationError("authentication failed; the connection is closing")
        if self.server is not None:  # an exchange (first or re-authentication) is under way
            if api_key == ApiKey.SASL_AUTHENTICATE or (
                not self.authenticated and api_key == ApiKey.API_VERSIONS
            ):
                return
            raise AuthenticationError(
                f"Unexpected Kafka request of type {api_name(api_key)} during SASL authentication."
            )
        if self.authenticated:
            expires_at = self.expires_at
            if (
                expires_at is not None
                and api_key != ApiKey.SASL_HANDSHAKE
                and trio.current_time() >= expires_at
            ):
                raise AuthenticationError(
                    f"{self.principal}'s session expired without re-authentication (KIP-368)"
                )
            return
        if api_key not in _BEFORE_AUTHENTICATION:
            raise AuthenticationError(
                f"Unexpected Kafka request of type {api_name(api_key)} during SASL handshake."
            )

    @property
    def in_handshake(self) -> bool:
        """A SaslHandshake here starts authentication, or re-authentication of a session that
        expires (Kafka re-authenticates only those; otherwise it is ILLEGAL_SASL_STATE)."""
        return self.gated and self.server is None and (not self.authenticated or self.expires_at is not None)

    def begin(self, mechanism: str, handshake_version: int) -> bool:
        """SaslHandshake: start an exchange; False when the mechanism is not enabled here, or,
        for a re-authentication, differs from the session's or uses v0's raw tokens (which
        cannot be interleaved with answers still on their way)."""
        factory = self.security.mechanisms.get(mechanism)
        if factory is None:
            return False
        if self.authenticated and (mechanism != self.mechanism or handshake_version == 0):
            return False
        self.server, self.mechanism = factory(), mechanism
        self.raw_tokens = handshake_version == 0
        return True

    def authenticate(self, token: bytes) -> tuple[bytes, int]:
        """One token of the exchange: the server's answer and, once complete, the session
        lifetime in ms (0: unlimited).  Raises AuthenticationFailed, after which the caller
        answers and the connection closes."""
        server = self.server
        if server is None:
            raise AuthenticationError("SaslAuthenticate before SaslHandshake")
        try:
            if len(token) > self.security.max_token_bytes:
                raise AuthenticationFailed(
                    f"SASL token of {len(token)} bytes exceeds sasl.server.max.receive.size"
                )
            answer = server.step(token)
            if server.complete and self.authenticated and server.principal != self.principal:
                raise AuthenticationFailed(
                    "Cannot change principals during re-authentication from "
                    f"{_dotted(self.principal)}: {_dotted(server.principal or ANONYMOUS)}"
                )
        except AuthenticationFailed as exc:
            self.failed = True
            self.server = None
            _warn_failure(
                "authentication failed for %s on listener %s: %s", self.peer, self.security.name, exc
            )
            raise
        if not server.complete:
            return answer, 0
        self.server, self.raw_tokens = None, False
        self.principal, self.authenticated = server.principal or ANONYMOUS, True
        return answer, self._start_session(server)

    def _start_session(self, server: SaslServer) -> int:
        """KIP-368, as Kafka computes it: the session ends at ``connections.max.reauth.ms`` or
        when the credential (an OAUTHBEARER token) expires, whichever is sooner; with neither,
        never.  A lifetime of 0 (a token accepted within the clock skew after its expiry) ends
        the session at once: the next request other than a re-authentication closes it."""
        reauth_ms, expires_ms = self.security.reauth_ms, server.expires_at_ms
        if not reauth_ms and expires_ms is None:
            self.expires_at = None
            return 0
        lifetime_ms = reauth_ms if expires_ms is None else max(0, expires_ms - self.security.clock())
        if reauth_ms and expires_ms is not None:
            lifetime_ms = min(lifetime_ms, reauth_ms)
        self.expires_at = trio.current_time() + lifetime_ms / 1000
        return lifetime_ms
