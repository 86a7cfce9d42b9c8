"""The secured-broker mode: one configuration, in Kafka's own keys, for Odradek and Apache Kafka.

A throwaway CA (``trustme``) signs the broker's and a client's certificates; keys are written
as PKCS#8 PEM, which both Python's ``ssl`` and Java's PEM keystores read. The broker gets
three secured listeners beside PLAINTEXT (``SSL`` with client certificates required,
``SASL_PLAINTEXT`` and ``SASL_SSL`` with PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER), all set with
the same ``server.properties`` keys on both brokers, which is the point: a Kafka configuration
carries over unchanged. Clients are described once (:class:`ClientSecurity`) and translated to
each client library's spelling.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trustme
from cryptography.hazmat.primitives import serialization

from compat_tests.kit.brokers import RunningBroker, start_broker

SECURED_LISTENERS = {"SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
PLAIN_USERS = {"alice": "alice-secret", "admin": "admin-secret"}
SCRAM_USERS = {"SCRAM-SHA-256": ("bob", "bob-secret"), "SCRAM-SHA-512": ("carol", "carol-secret")}
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the CA certificate clients and the broker trust
    server: Path  # the broker's key and certificate chain (one PEM)
    client_cert: Path
    client_key: Path
    client_keystore: Path  # the client's key and certificate in one PEM (Java's PEM keystore)


def _pkcs8(blob: trustme.Blob) -> bytes:
    key = serialization.load_pem_private_key(blob.bytes(), password=None)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def make_tls_files(directory: Path) -> TlsFiles:
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate (CN=client-alice)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("client-alice@example.com", common_name="client-alice")
    files = TlsFiles(
        directory / "ca.pem",
        directory / "server.pem",
        directory / "client.crt",
        directory / "client.key",
        directory / "client.pem",
    )
    ca.cert_pem.write_to_path(str(files.ca))
    chain = b"".join(blob.bytes() for blob in server.cert_chain_pems)
    files.server.write_bytes(_pkcs8(server.private_key_pem) + chain)
    files.client_cert.write_bytes(client.cert_chain_pems[0].bytes())
    files.client_key.write_bytes(_pkcs8(client.private_key_pem))
    files.client_keystore.write_bytes(files.client_key.read_bytes() + files.client_cert.read_bytes())
    return files


def broker_overrides(files: TlsFiles) -> dict[str, str]:
    """The secured listeners' settings, as one would write them in Kafka's server.properties."""
    plain_users = " ".join(f'user_{name}="{password}"' for name, password in PLAIN_USERS.items())
    overrides = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(files.server),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(files.ca),
        "listener.name.ssl.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
    }
    for listener in ("sasl_plaintext", "sasl_ssl"):
        prefix = f"listener.name.{listener}"
        overrides[f"{prefix}.plain.sasl.jaas.config"] = f"{PLAIN_MODULE} required {plain_users};"
        overrides[f"{prefix}.scram-sha-256.sasl.jaas.config"] = f"{SCRAM_MODULE} required;"
        overrides[f"{prefix}.scram-sha-512.sasl.jaas.config"] = f"{SCRAM_MODULE} required;"
        overrides[f"{prefix}.oauthbearer.sasl.jaas.config"] = (
            f'{OAUTH_MODULE} required unsecuredLoginStringClaim_sub="broker";'
        )
    return overrides


def start_secured_broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[RunningBroker, TlsFiles]:
    """For a module fixture: a broker of ``--broker``'s kind with the secured listeners beside
    PLAINTEXT, and its TLS files; skips under ``--bootstrap`` (a running broker has its own)."""
    if request.config.getoption("--bootstrap"):
        pytest.skip("the secured mode starts its own broker; drop --bootstrap")
    kind = request.config.getoption("--broker")
    workdir = tmp_path_factory.mktemp(f"{kind}-secured")
    files = make_tls_files(workdir / "tls")
    broker = start_broker(
        kind, workdir / "broker", broker_overrides(files), extra_listeners=SECURED_LISTENERS
    )
    return broker, files


def unsecured_jwt(subject: str, lifetime_s: float = 3600) -> str:
    """An unsecured JWS (``alg: none``), what Kafka's unsecured OAUTHBEARER validator accepts."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    # Whole seconds, as JWT NumericDates usually are: Kafka refuses an ``iat`` in the future, and
    # a fractional one checked within its own millisecond is (invalid_token, seen in a CI run).
    now = int(time.time())
    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'iat': now, 'exp': now + int(lifetime_s)})}."


@dataclass(frozen=True)
class ClientSecurity:
    """How one client authenticates: the listener, the SASL mechanism (None: a certificate).

    Each spelling takes the TLS files, which only TLS listeners need (None for the others)."""

    listener: str
    mechanism: str | None = None
    user: str = ""
    password: str = ""
    with_certificate: bool = True  # on the SSL listener: present the client certificate
    token_lifetime_s: float = 3600  # OAUTHBEARER: negative makes an expired token

    @property
    def tls(self) -> bool:
        return self.listener in ("SSL", "SASL_SSL")

    @property
    def presents_certificate(self) -> bool:
        return self.listener == "SSL" and self.with_certificate

    def java(self, files: TlsFiles | None) -> dict[str, str]:
        props = {"security.protocol": self.listener}
        if self.tls:
            props |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(files.ca)}
            if self.presents_certificate:
                props |= {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(files.client_keystore)}
        if self.mechanism == "OAUTHBEARER":
            props["sasl.mechanism"] = self.mechanism
            props["sasl.jaas.config"] = (
                f'{OAUTH_MODULE} required unsecuredLoginStringClaim_sub="{self.user}";'
            )
        elif self.mechanism is not None:
            module = PLAIN_MODULE if self.mechanism == "PLAIN" else SCRAM_MODULE
            props["sasl.mechanism"] = self.mechanism
            props["sasl.jaas.config"] = (
                f'{module} required username="{self.user}" password="{self.password}";'
            )
        return props

    def librdkafka(self, files: TlsFiles | None) -> dict[str, Any]:
        """confluent-kafka (and kcat) properties."""
        conf: dict[str, Any] = {"security.protocol": self.listener}
        if self.tls:
            conf["ssl.ca.location"] = str(files.ca)
            if self.presents_certificate:
                conf |= {
                    "ssl.certificate.location": str(files.client_cert),
                    "ssl.key.location": str(files.client_key),
                }
        if self.mechanism == "OAUTHBEARER":
            conf |= {
                "sasl.mechanism": "OAUTHBEARER",
                "enable.sasl.oauthbearer.unsecure.jwt": True,
                "sasl.oauthbearer.config": f"principal={self.user} lifeSeconds={max(1, int(self.token_lifetime_s))}",
            }
        elif self.mechanism is not None:
            conf |= self._password_login("sasl.mechanism", "sasl.username", "sasl.password")
        return conf

    def kafka_python(self, files: TlsFiles | None) -> dict[str, Any]:
        """kafka-python keyword arguments."""
        from kafka.net.sasl.oauth import AbstractTokenProvider

        conf: dict[str, Any] = {"security_protocol": self.listener}
        if self.tls:
            conf |= {"ssl_cafile": str(files.ca), "ssl_check_hostname": True}
            if self.presents_certificate:
                conf |= {"ssl_certfile": str(files.client_cert), "ssl_keyfile": str(files.client_key)}
        if self.mechanism == "OAUTHBEARER":
            subject, lifetime = self.user, self.token_lifetime_s

            class Token(AbstractTokenProvider):
                def token(self) -> str:
                    return unsecured_jwt(subject, lifetime)

            conf |= {"sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": Token()}
        elif self.mechanism is not None:
            conf |= self._password_login("sasl_mechanism", "sasl_plain_username", "sasl_plain_password")
        return conf

    def _password_login(self, mechanism_key: str, user_key: str, password_key: str) -> dict[str, Any]:
        """A PLAIN or SCRAM login (mechanism, user and password) under one client's key names."""
        return {mechanism_key: self.mechanism, user_key: self.user, password_key: self.password}


def client_cases() -> dict[str, ClientSecurity]:
    """Every way in, by a readable id: each mechanism on each SASL listener, and mTLS."""
    cases = {"ssl-mtls": ClientSecurity("SSL")}
    for listener in ("SASL_PLAINTEXT", "SASL_SSL"):
        cases[f"{listener.lower()}-plain"] = ClientSecurity(listener, "PLAIN", "alice", PLAIN_USERS["alice"])
        for mechanism, (user, password) in SCRAM_USERS.items():
            cases[f"{listener.lower()}-{mechanism.lower()}"] = ClientSecurity(
                listener, mechanism, user, password
            )
        cases[f"{listener.lower()}-oauthbearer"] = ClientSecurity(listener, "OAUTHBEARER", "dave")
    return cases
