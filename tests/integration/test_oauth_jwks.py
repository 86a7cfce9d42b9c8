"""OAUTHBEARER with signed tokens: kafka-python presents RS256 JWTs, the broker checks them
against a JWKS file (Kafka's ``OAuthBearerValidatorCallbackHandler`` configuration).

Odradek only: Apache Kafka 4.x reads a ``file:`` JWKS URL only when the JVM allows it
(``-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls``), which the compat suite's Kafka does
not set; the unsecured mode is checked against Kafka in ``compat_tests/test_security.py``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from kafka import KafkaProducer
from kafka.errors import KafkaError
from kafka.net.sasl.oauth import AbstractTokenProvider

from compat_tests.kit.brokers import RunningBroker, start_odradek
from compat_tests.kit.secured import TlsFiles, make_tls_files

ISSUER, AUDIENCE = "https://issuer.example", "kafka"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


class SignedToken(AbstractTokenProvider):
    """An access token as an identity provider would issue it."""

    def __init__(self, key: rsa.RSAPrivateKey = KEY, **claims: object) -> None:
        self.key, self.claims = key, claims

    def token(self) -> str:
        now = int(time.time())
        claims = {
            "sub": "svc-orders",
            "iss": ISSUER,
            "aud": AUDIENCE,
            "iat": now,
            "exp": now + 300,
            **self.claims,
        }
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "key-1"})


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningBroker, TlsFiles]]:
    workdir = tmp_path_factory.mktemp("jwks")
    files = make_tls_files(workdir / "tls")
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key()))
    jwks = workdir / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**public, "kid": "key-1", "use": "sig", "alg": "RS256"}]}))
    running = start_odradek(
        workdir / "broker",
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(files.server),
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": (
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
            ),
            "sasl.oauthbearer.jwks.endpoint.url": jwks.as_uri(),
            "sasl.oauthbearer.expected.issuer": ISSUER,
            "sasl.oauthbearer.expected.audience": AUDIENCE,
        },
        extra_listeners={"SASL_SSL": "SASL_SSL"},
    )
    yield running, files
    running.stop()


def _produce(broker: tuple[RunningBroker, TlsFiles], token: SignedToken) -> None:
    running, files = broker
    # kafka-python's token provider hook presents the signed JWT; the drivers have no SASL settings.
    producer = KafkaProducer(
        bootstrap_servers=running.addresses["SASL_SSL"],
        security_protocol="SASL_SSL",
        ssl_cafile=str(files.ca),
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=token,
        max_block_ms=8000,
        bootstrap_timeout_ms=8000,
    )
    try:
        producer.send(f"jwks-{uuid.uuid4().hex[:6]}", b"signed").get(10)
    finally:
        producer.close(5)


def test_a_signed_token_from_the_issuer_is_accepted(broker: tuple[RunningBroker, TlsFiles]) -> None:
    _produce(broker, SignedToken())


@pytest.mark.parametrize(
    "token",
    [
        SignedToken(
            key=rsa.generate_private_key(public_exponent=65537, key_size=2048)
        ),  # not the issuer's key
        SignedToken(aud="another-service"),
        SignedToken(iss="https://elsewhere.example"),
        SignedToken(exp=int(time.time()) - 120),
    ],
    ids=["forged", "wrong-audience", "wrong-issuer", "expired"],
)
def test_other_tokens_are_refused(broker: tuple[RunningBroker, TlsFiles], token: SignedToken) -> None:
    with pytest.raises(KafkaError):  # kafka-python reports a refused token as a failed bootstrap
        _produce(broker, token)
