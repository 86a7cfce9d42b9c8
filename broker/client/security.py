"""How the ``odradek`` commands reach a secured cluster: TLS and SASL (PLAIN, SCRAM-SHA-256/512).

The settings come from a client properties file under Kafka's own key names, the file
``kafka-topics.sh --command-config`` takes (and librdkafka's where Kafka's are Java-only):
``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config`` (or ``sasl.username`` and
``sasl.password``), ``ssl.truststore.location`` with ``ssl.truststore.type=PEM`` (or
``ssl.ca.location``), ``ssl.keystore.location`` with ``ssl.keystore.type=PEM`` (or
``ssl.certificate.location`` and ``ssl.key.location``), ``ssl.key.password`` and
``ssl.endpoint.identification.algorithm``. JKS and PKCS12 stores are Java's; they are refused with
a message saying to convert them to PEM.

SCRAM is RFC 5802 as Kafka runs it (KIP-84): a broker's iteration count is taken only up to
Kafka's own maximum, so a hostile broker cannot make the client hash for minutes, and the
broker's final signature is checked, so a broker that does not know the password is not trusted.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import ssl
from collections.abc import Callable
from dataclasses import dataclass

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = {"PLAIN": None, "SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
SCRAM_MAX_ITERATIONS = 16384
"""Kafka's ScramMechanism maximum: a broker asking for more is refused."""
SCRAM_MIN_ITERATIONS = 4096


class SecurityConfigError(ValueError):
    """A client properties file that cannot be used; the message says which key and why."""


class AuthenticationFailed(ConnectionError):
    """The broker refused the credentials (or proved it does not know them)."""


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """A client's security settings: PLAINTEXT with nothing else by default."""

    protocol: str = "PLAINTEXT"
    mechanism: str = "PLAIN"
    username: str = ""
    password: str = ""
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    key_password: str | None = None
    check_hostname: bool = True

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def tls_context(self) -> ssl.SSLContext:
        """The TLS context of the connection: the truststore given, else the system's."""
        context = ssl.create_default_context(cafile=self.ca_file)
        context.check_hostname = self.check_hostname
        if self.cert_file is not None:
            context.load_cert_chain(self.cert_file, self.key_file, self.key_password)
        return context


PLAINTEXT = ClientSecurity()


def security_from_properties(properties: dict[str, str]) -> ClientSecurity:
    """The settings Kafka's client keys in ``properties`` name (unknown keys are ignored, as
    Kafka's tools ignore the keys they do not use)."""
    protocol = properties.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise SecurityConfigError(f"security.protocol={protocol} is not one of {', '.join(PROTOCOLS)}")
    mechanism = properties.get("sasl.mechanism", "PLAIN").upper()
    if protocol.startswith("SASL_") and mechanism not in MECHANISMS:
        raise SecurityConfigError(
            f"sasl.mechanism={mechanism} is not supported here; use one of {', '.join(MECHANISMS)}"
        )
    username, password = properties.get("sasl.username", ""), properties.get("sasl.password", "")
    if jaas := properties.get("sasl.jaas.config"):
        found = dict(re.findall(r'(username|password)\s*=\s*"([^"]*)"', jaas))
        username, password = found.get("username", username), found.get("password", password)
    if protocol.startswith("SASL_") and not username:
        raise SecurityConfigError(
            'SASL needs a user: sasl.jaas.config=... username="..." password="..."; '
            "(or sasl.username and sasl.password)"
        )
    cert, key = properties.get("ssl.certificate.location"), properties.get("ssl.key.location")
    if keystore := properties.get("ssl.keystore.location"):
        _require_pem(properties, "ssl.keystore")
        cert, key = keystore, None  # a PEM keystore holds the key and its chain
    ca = properties.get("ssl.ca.location")
    if truststore := properties.get("ssl.truststore.location"):
        _require_pem(properties, "ssl.truststore")
        ca = truststore
    return ClientSecurity(
        protocol=protocol,
        mechanism=mechanism,
        username=username,
        password=password,
        ca_file=ca,
        cert_file=cert,
        key_file=key,
        key_password=properties.get("ssl.key.password"),
        check_hostname=properties.get("ssl.endpoint.identification.algorithm", "https") != "",
    )


def _require_pem(properties: dict[str, str], store: str) -> None:
    kind = properties.get(f"{store}.type", "JKS").upper()
    if kind != "PEM":
        raise SecurityConfigError(
            f"{store}.type={kind}: only PEM files are read here; convert the store "
            f"(keytool -importkeystore ... then openssl) and set {store}.type=PEM"
        )


# --- SASL ---------------------------------------------------------------------------------

Exchange = Callable[[bytes], bytes]
"""Send one SaslAuthenticate token and return the broker's answer token."""


def authenticate(security: ClientSecurity, exchange: Exchange) -> None:
    """Run the SASL exchange of ``security.mechanism`` (after the handshake)."""
    if security.mechanism == "PLAIN":
        exchange(b"\0" + security.username.encode() + b"\0" + security.password.encode())
        return
    _scram(security, MECHANISMS[security.mechanism] or "sha256", exchange)


def _scram(security: ClientSecurity, hash_name: str, exchange: Exchange) -> None:
    user = security.username.replace("=", "=3D").replace(",", "=2C")
    client_nonce = secrets.token_urlsafe(24)
    first_bare = f"n={user},r={client_nonce}"
    server_first = exchange(f"n,,{first_bare}".encode()).decode(errors="replace")
    fields = dict(part.split("=", 1) for part in server_first.split(",") if "=" in part)
    nonce, salt, iterations = fields.get("r", ""), fields.get("s", ""), fields.get("i", "")
    if not nonce.startswith(client_nonce) or not salt or not iterations.isdigit():
        raise AuthenticationFailed(f"the broker's SCRAM answer is not one: {server_first[:200]!r}")
    rounds = int(iterations)
    if not SCRAM_MIN_ITERATIONS <= rounds <= SCRAM_MAX_ITERATIONS:
        raise AuthenticationFailed(
            f"the broker asked for {rounds} SCRAM iterations; Kafka allows {SCRAM_MIN_ITERATIONS}-{SCRAM_MAX_ITERATIONS}"
        )
    salted = hashlib.pbkdf2_hmac(hash_name, security.password.encode(), base64.b64decode(salt), rounds)
    client_key = hmac.digest(salted, b"Client Key", hash_name)
    stored_key = hashlib.new(hash_name, client_key).digest()
    without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.digest(stored_key, auth_message, hash_name)
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_final = exchange(f"{without_proof},p={base64.b64encode(proof).decode()}".encode()).decode(
        errors="replace"
    )
    server_key = hmac.digest(salted, b"Server Key", hash_name)
    expected = base64.b64encode(hmac.digest(server_key, auth_message, hash_name)).decode()
    if not hmac.compare_digest(server_final, f"v={expected}"):
        raise AuthenticationFailed(
            "the broker's SCRAM signature is wrong: it does not know this user's password"
        )
