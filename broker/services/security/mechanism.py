"""What every SASL mechanism server looks like to the connection: tokens in, tokens out.

A mechanism is sans-IO: :meth:`SaslServer.step` takes the client's next token and returns
the server's answer; it raises :class:`AuthenticationFailed` with the message Kafka sends
(``SASL_AUTHENTICATION_FAILED``), and says when it is done through ``complete``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod


class AuthenticationFailed(Exception):
    """The client's credentials were refused; the message goes to the client as Kafka words it."""


class SaslServer(ABC):
    """One authentication exchange of one mechanism on one connection."""

    def __init__(self) -> None:
        self.complete = False
        self.principal: str | None = None  # "User:<name>" once complete
        self.expires_at_ms: int | None = None  # credential expiry (OAUTHBEARER tokens)

    @abstractmethod
    def step(self, token: bytes) -> bytes:
        """Consume the client's token; the server's answer (b"" when there is none)."""

    def _succeed(self, user: str) -> None:
        self.complete = True
        self.principal = f"User:{user}"
