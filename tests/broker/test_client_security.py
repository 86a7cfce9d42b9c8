"""The ``odradek`` commands' client security settings: Kafka's client properties read as Kafka's
tools read them, and a SCRAM exchange that a hostile broker can neither stretch nor fake.

The real exchanges run against real brokers in ``compat_tests/test_security.py``
(``test_odradek_commands_reach_secured_listeners``); what a broker of ours never does (ask for ten
million iterations, answer with a forged signature) is scripted here."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.client.security import (
    AuthenticationFailed,
    ClientSecurity,
    SecurityConfigError,
    authenticate,
    security_from_properties,
)
from broker.config.config import parse_properties


def test_a_properties_file_is_read_as_java_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        "# comment\n! also a comment\n\nsecurity.protocol = SASL_SSL\nsasl.mechanism: SCRAM-SHA-512\n"
        'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="al=ice" '
        'password="p,w";\nssl.truststore.type=PEM\nssl.truststore.location=/etc/ca.pem\n'
    )
    security = security_from_properties(parse_properties(path.read_text()))
    assert security == ClientSecurity(
        protocol="SASL_SSL",
        mechanism="SCRAM-SHA-512",
        username="al=ice",
        password="p,w",
        ca_file="/etc/ca.pem",
    )


@pytest.mark.parametrize(
    ("properties", "says"),
    [
        ({"security.protocol": "SASL_TLS"}, "security.protocol=SASL_TLS is not one of"),
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"},
            "sasl.mechanism=GSSAPI is not supported",
        ),
        ({"security.protocol": "SASL_PLAINTEXT"}, "SASL needs a user"),
        (
            {"ssl.truststore.location": "/etc/store.jks"},
            "ssl.truststore.type=JKS: only PEM files are read here",
        ),
    ],
)
def test_what_cannot_be_used_is_said(properties: dict[str, str], says: str) -> None:
    with pytest.raises(SecurityConfigError, match=says):
        security_from_properties(properties)


SCRAM_USER = ClientSecurity(protocol="SASL_SSL", mechanism="SCRAM-SHA-256", username="bob", password="secret")


def _server_first(iterations: int):
    def exchange(token: bytes) -> bytes:
        client_nonce = token.decode().split("r=", 1)[1]
        if token.startswith(b"n,,"):
            return f"r={client_nonce}server,s=c2FsdA==,i={iterations}".encode()
        return b"v=Zm9yZ2Vk"  # a signature the broker could not have computed without the password

    return exchange


def test_a_broker_asking_for_too_many_iterations_is_refused_before_hashing() -> None:
    with pytest.raises(AuthenticationFailed, match="10000000 SCRAM iterations"):
        authenticate(SCRAM_USER, _server_first(10_000_000))


def test_a_broker_that_does_not_know_the_password_is_not_trusted() -> None:
    with pytest.raises(AuthenticationFailed, match="signature is wrong"):
        authenticate(SCRAM_USER, _server_first(4096))
