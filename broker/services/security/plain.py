"""SASL/PLAIN (RFC 4616) against the users listed in the listener's JAAS line.

Kafka's ``PlainServerCallbackHandler`` reads ``user_<name>="<password>"`` options from the
``PlainLoginModule`` entry; so does this.  Passwords are compared in constant time.
"""

from __future__ import annotations

import hmac

from broker.services.security.mechanism import AuthenticationFailed, SaslServer

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
MAX_FIELD_BYTES = 255 * 4  # SASLprep'd names and passwords: generous, but bounded


def plain_users(options: dict[str, str]) -> dict[str, bytes]:
    """The ``user_<name>`` entries of a PlainLoginModule line, as name -> password bytes."""
    return {name[5:]: value.encode() for name, value in options.items() if name.startswith("user_")}


class PlainServer(SaslServer):
    def __init__(self, users: dict[str, bytes]) -> None:
        super().__init__()
        self._users = users

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise AuthenticationFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        if any(len(part) > MAX_FIELD_BYTES for part in parts):
            raise AuthenticationFailed(
                f"Invalid SASL/PLAIN response: a field exceeds {MAX_FIELD_BYTES} bytes"
            )
        authzid, username, password = parts
        if not username:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        if authzid and authzid != username:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        expected = self._users.get(username.decode(errors="replace"))
        # Compare against something even for unknown users so timing does not tell who exists.
        if not hmac.compare_digest(password, expected if expected is not None else b"\0" * len(password)) or (
            expected is None
        ):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        self._succeed(username.decode())
        return b""
