"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's ``ScramSaslServer``.

The broker never sees or stores a password: AlterUserScramCredentials carries the salted
password the admin client derived, and the store keeps only salt, iterations, StoredKey and
ServerKey (:class:`ScramCredential`), from which a client's proof can be checked and the
server's signature made.  Messages are bounded (``sasl.server.max.receive.size`` bounds the
token; fields are checked before use).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from broker.services.security.mechanism import AuthenticationFailed, SaslServer

HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}  # Kafka's ScramMechanism ids on the wire
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384  # Kafka's accepted range


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the broker keeps of a SCRAM password (RFC 5802 section 3)."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def from_salted_password(
        cls, mechanism: str, salt: bytes, salted: bytes, iterations: int
    ) -> ScramCredential:
        digest = HASHES[mechanism]
        client_key = hmac.digest(salted, b"Client Key", digest)
        return cls(salt, iterations, digest(client_key).digest(), hmac.digest(salted, b"Server Key", digest))

    @classmethod
    def from_password(
        cls, mechanism: str, password: str, iterations: int = MIN_ITERATIONS
    ) -> ScramCredential:
        """For tests: derive a fresh credential from a password."""
        salt, salted = salt_password(mechanism, password, iterations)
        return cls.from_salted_password(mechanism, salt, salted, iterations)


def salt_password(mechanism: str, password: str, iterations: int) -> tuple[bytes, bytes]:
    """A fresh random salt and the password salted with it (RFC 5802 ``Hi``: PBKDF2 with the
    mechanism's hash), what an admin client sends in AlterUserScramCredentials so that the
    password itself never reaches the broker."""
    salt = secrets.token_bytes(32)
    return salt, hashlib.pbkdf2_hmac(HASHES[mechanism]().name, password.encode(), salt, iterations)


ScramLookup = Callable[[str, str], "ScramCredential | None"]
"""(user, mechanism) -> that user's credential for the mechanism, if any."""


def _attributes(message: str) -> dict[str, str]:
    found = {}
    for item in message.split(","):
        name, sep, value = item.partition("=")
        if sep and len(name) == 1:
            found.setdefault(name, value)
    return found


def _extensions(bare: str) -> dict[str, str]:
    """The client-first message's extensions (Kafka's ``ScramExtensions``): its items whose
    name is longer than one letter, ``tokenauth=true`` the only one Kafka acts on."""
    found: dict[str, str] = {}
    for item in bare.split(","):
        name, sep, value = item.partition("=")
        if sep and len(name) > 1:
            found[name] = value
    return found


def _unescape_name(name: str) -> str | None:
    """A saslname's user name as Kafka's ``ScramFormatter.username`` reads it: ``=2C`` is a
    comma, ``=3D`` an equals sign, and any other ``=`` makes the name invalid (None)."""
    with_commas = name.replace("=2C", ",")
    if "=" in with_commas.replace("=3D", ""):
        return None
    return with_commas.replace("=3D", "=")


class ScramServer(SaslServer):
    """One SCRAM exchange: client-first, server-first, client-final, server-final."""

    def __init__(self, mechanism: str, lookup: ScramLookup) -> None:
        super().__init__()
        self._mechanism = mechanism
        self._digest = HASHES[mechanism]
        self._lookup = lookup
        self._state = "first"
        self._user = ""
        self._credential: ScramCredential | None = None
        self._nonce = ""
        self._auth_message = ""
        self._channel_binding = ""  # c=: the base64 of the client's GS2 header (RFC 5802 5.1)

    def step(self, token: bytes) -> bytes:
        try:
            message = token.decode()
        except UnicodeDecodeError:
            raise AuthenticationFailed("Invalid SCRAM message: not UTF-8") from None
        if self._state == "first":
            return self._client_first(message)
        if self._state == "final":
            return self._client_final(message)
        raise AuthenticationFailed("Unexpected SCRAM message after authentication completed")

    def _client_first(self, message: str) -> bytes:
        gs2, sep, bare = message.partition(",")
        authzid, sep2, bare = bare.partition(",")
        # Kafka accepts the GS2 flag "n" only (no channel binding): "y" and "p=..." are refused.
        if not sep or not sep2 or gs2 != "n" or not bare.startswith("n="):
            raise AuthenticationFailed("Invalid SCRAM client first message")
        fields = _attributes(bare)
        saslname, client_nonce = fields.get("n", ""), fields.get("r", "")
        if not saslname or not client_nonce:
            raise AuthenticationFailed("Invalid SCRAM client first message: missing user name or nonce")
        user = _unescape_name(saslname)
        if authzid and _unescape_name(authzid.removeprefix("a=")) != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        if user is None or _extensions(bare).get("tokenauth", "").lower() == "true":
            # tokenauth=true names a delegation token, not a user: Kafka looks its id up among the
            # tokens, and Odradek has none (broker/handlers/delegation_tokens.py), so it is refused
            # as by a Kafka broker without that token, never checked against a user's password.
            raise self._invalid()
        credential = self._lookup(user, self._mechanism)
        if credential is None:
            raise self._invalid()
        self._user, self._credential = user, credential
        self._nonce = client_nonce + secrets.token_urlsafe(24)
        server_first = (
            f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},i={credential.iterations}"
        )
        self._auth_message = f"{bare},{server_first}"
        self._channel_binding = base64.b64encode(f"{gs2},{authzid},".encode()).decode()
        self._state = "final"
        return server_first.encode()

    def _client_final(self, message: str) -> bytes:
        credential = self._credential
        without_proof, sep, proof_field = message.rpartition(",p=")
        fields = _attributes(without_proof)
        if (
            credential is None
            or not sep
            or fields.get("r") != self._nonce
            or fields.get("c") != self._channel_binding
        ):
            raise AuthenticationFailed("Invalid SCRAM client final message")
        auth_message = f"{self._auth_message},{without_proof}".encode()
        try:
            proof = base64.b64decode(proof_field, validate=True)
        except ValueError:
            raise AuthenticationFailed("Invalid SCRAM client final message: proof is not base64") from None
        signature = hmac.digest(credential.stored_key, auth_message, self._digest)
        if len(proof) != len(signature):
            raise self._invalid()
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(self._digest(client_key).digest(), credential.stored_key):
            raise self._invalid()
        self._state = "done"
        self._succeed(self._user)
        server_signature = hmac.digest(credential.server_key, auth_message, self._digest)
        return b"v=" + base64.b64encode(server_signature)

    def _invalid(self) -> AuthenticationFailed:
        """Kafka words every SCRAM refusal alike (unknown user or wrong proof), telling nothing."""
        return AuthenticationFailed(
            "Authentication failed during authentication due to invalid credentials with SASL mechanism "
            + self._mechanism
        )
