"""The SASL mechanism servers and TLS principal rules, token by token (they are sans-IO).

A SCRAM client is computed here from RFC 5802, independently of the server's code; real
clients are exercised end to end in ``compat_tests/test_security.py``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from broker.config.config import ConfigError
from broker.services.security.authentication import ConnectionAuth
from broker.services.security.jaas import parse_jaas
from broker.services.security.jwks_validator import JwksValidator
from broker.services.security.listener_security import ListenerSecurity, SecurityProtocol
from broker.services.security.mechanism import AuthenticationFailed
from broker.services.security.oauthbearer import OAuthBearerServer, UnsecuredValidator
from broker.services.security.plain import PlainServer
from broker.services.security.scram import ScramCredential, ScramServer
from broker.services.security.tls import PrincipalMapper, subject_name

MECHANISM = "SCRAM-SHA-256"


def _scram_store(password: str = "pencil") -> dict[tuple[str, str], ScramCredential]:
    return {("user", MECHANISM): ScramCredential.from_password(MECHANISM, password)}


def _scram_exchange(
    server: ScramServer,
    user: str,
    password: str,
    tamper_nonce: bool = False,
    *,
    gs2: str = "n,,",
    extensions: str = "",
    mechanism: str = MECHANISM,
) -> bytes:
    """A client's whole exchange; ``user`` is sent as given (a saslname, escaped by the caller)."""
    digest = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    client_nonce = "fyko+d2lbbFgONRv9qkxdawL"
    bare = f"n={user},r={client_nonce}{extensions}"
    server_first = server.step(f"{gs2}{bare}".encode()).decode()
    fields = dict(item.split("=", 1) for item in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    nonce = fields["r"] + ("x" if tamper_nonce else "")
    without_proof = f"c={base64.b64encode(gs2.encode()).decode()},r={nonce}"
    auth_message = f"{bare},{server_first},{without_proof}".encode()
    client_key = hmac.digest(salted, b"Client Key", digest)
    signature = hmac.digest(hashlib.new(digest, client_key).digest(), auth_message, digest)
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    final = server.step(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())
    expected = hmac.digest(hmac.digest(salted, b"Server Key", digest), auth_message, digest)
    assert final == b"v=" + base64.b64encode(expected)
    return final


def test_scram_exchange_authenticates_and_proves_the_server() -> None:
    store = _scram_store()
    server = ScramServer(MECHANISM, lambda user, mechanism: store.get((user, mechanism)))
    _scram_exchange(server, "user", "pencil")
    assert server.complete and server.principal == "User:user"


@pytest.mark.parametrize(
    ("user", "password", "tamper"),
    [("user", "wrong", False), ("nobody", "pencil", False), ("user", "pencil", True)],
)
def test_scram_refusals_all_read_alike(user: str, password: str, tamper: bool) -> None:
    store = _scram_store()
    server = ScramServer(MECHANISM, lambda u, m: store.get((u, m)))
    with pytest.raises(
        AuthenticationFailed, match="invalid credentials with SASL mechanism SCRAM-SHA-256|final"
    ):
        _scram_exchange(server, user, password, tamper)
    assert not server.complete


def test_scram_client_first_must_be_well_formed() -> None:
    server = ScramServer(MECHANISM, lambda u, m: None)
    with pytest.raises(AuthenticationFailed, match="Invalid SCRAM client first message"):
        server.step(b"garbage")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize(
    ("name", "saslname", "gs2"),
    [
        ("user", "user", "n,,"),
        ("user", "user", "n,a=user,"),  # an authorization id equal to the user name is accepted
        ("o,dd=name", "o=2Cdd=3Dname", "n,,"),  # RFC 5802's escapes, as Kafka's clients send them
    ],
)
def test_scram_accepts_what_kafka_accepts(mechanism: str, name: str, saslname: str, gs2: str) -> None:
    store = {(name, mechanism): ScramCredential.from_password(mechanism, "pencil")}
    server = ScramServer(mechanism, lambda u, m: store.get((u, m)))
    _scram_exchange(server, saslname, "pencil", gs2=gs2, mechanism=mechanism)
    assert server.complete and server.principal == f"User:{name}"


@pytest.mark.parametrize(
    ("saslname", "gs2", "extensions", "message"),
    [
        # Kafka's client-first accepts the GS2 flag "n" only: no channel binding, asked or offered
        ("user", "y,,", "", "Invalid SCRAM client first message"),
        ("user", "p=tls-unique,,", "", "Invalid SCRAM client first message"),
        # a delegation token's id and HMAC: Odradek has no tokens, and never tries the password
        ("user", "n,,", ",tokenauth=true", "invalid credentials with SASL mechanism SCRAM-SHA-256"),
        ("user", "n,,", ",tokenauth=TRUE", "invalid credentials with SASL mechanism SCRAM-SHA-256"),
        # an "=" escaping neither "," nor "=" is no user name (Kafka's ScramFormatter.username)
        ("us=er", "n,,", "", "invalid credentials with SASL mechanism SCRAM-SHA-256"),
        ("user", "n,a=other,", "", "authorization id that is different from username"),
    ],
)
def test_scram_refuses_what_kafka_refuses(saslname: str, gs2: str, extensions: str, message: str) -> None:
    store = {("user", MECHANISM): ScramCredential.from_password(MECHANISM, "pencil")}
    looked_up: list[str] = []

    def lookup(user: str, mechanism: str) -> ScramCredential | None:
        looked_up.append(user)
        return store.get((user, mechanism))

    server = ScramServer(MECHANISM, lookup)
    with pytest.raises(AuthenticationFailed, match=message):
        _scram_exchange(server, saslname, "pencil", gs2=gs2, extensions=extensions)
    assert not server.complete and looked_up == []


def test_scram_extension_kafka_ignores_is_ignored() -> None:
    store = _scram_store()
    server = ScramServer(MECHANISM, lambda u, m: store.get((u, m)))
    _scram_exchange(server, "user", "pencil", extensions=",tokenauth=false,other=1")
    assert server.principal == "User:user"


def test_plain_checks_user_password_and_authorization_id() -> None:
    users = {"alice": b"secret"}
    server = PlainServer(users)
    server.step(b"\0alice\0secret")
    assert server.principal == "User:alice"
    for token, message in (
        (b"\0alice\0nope", "Invalid username or password"),
        (b"\0mallory\0secret", "Invalid username or password"),
        (b"bob\0alice\0secret", "authorization id that is different from username"),
        (b"alice-secret", "expected 3 tokens"),
    ):
        with pytest.raises(AuthenticationFailed, match=message):
            PlainServer(users).step(token)


def _unsecured(claims: dict[str, object], alg: str = "none") -> bytes:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"n,,\x01auth=Bearer {part({'alg': alg})}.{part(claims)}.\x01\x01".encode()


def test_unsecured_token_authenticates_its_subject_until_it_expires() -> None:
    server = OAuthBearerServer(UnsecuredValidator())
    assert server.step(_unsecured({"sub": "dave", "exp": time.time() + 60})) == b""
    assert server.principal == "User:dave" and server.expires_at_ms is not None


async def test_token_expiry_and_session_lifetime_follow_the_broker_clock() -> None:
    fixed_ms = 978_307_200_000  # 2001-01-01: the token below expired long ago by the machine's clock
    validator = UnsecuredValidator(clock=lambda: fixed_ms)
    security = ListenerSecurity(
        "SASL",
        SecurityProtocol.SASL_PLAINTEXT,
        mechanisms={"OAUTHBEARER": lambda: OAuthBearerServer(validator)},
        clock=lambda: fixed_ms,
    )
    auth = ConnectionAuth(security, "peer", "host")
    assert auth.begin("OAUTHBEARER", 1)
    answer, lifetime_ms = auth.authenticate(_unsecured({"sub": "dave", "exp": fixed_ms / 1000 + 60}))
    assert answer == b"" and auth.principal == "User:dave"
    assert lifetime_ms == 60_000


@pytest.mark.parametrize(
    ("claims", "alg", "validator"),
    [
        ({"sub": "dave", "exp": time.time() - 60}, "none", UnsecuredValidator()),
        ({"sub": "dave", "exp": float("nan")}, "none", UnsecuredValidator()),
        ({"sub": "dave", "exp": 1e300}, "none", UnsecuredValidator()),
        ({"exp": time.time() + 60}, "none", UnsecuredValidator()),
        ({"sub": "dave", "exp": time.time() + 60}, "HS256", UnsecuredValidator()),
        (
            {"sub": "dave", "exp": time.time() + 60, "scope": "read"},
            "none",
            UnsecuredValidator(required_scope=("write",)),
        ),
    ],
)
def test_refused_token_gets_the_rfc7628_challenge_then_fails(
    claims: dict[str, object], alg: str, validator: UnsecuredValidator
) -> None:
    server = OAuthBearerServer(validator)
    assert server.step(_unsecured(claims, alg)) == b'{"status":"invalid_token"}'
    with pytest.raises(AuthenticationFailed, match="invalid_token"):
        server.step(b"\x01")


def test_jwks_validator_checks_signature_audience_and_expiry() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwks = json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]})
    validator = JwksValidator(jwks, ["kafka"], "issuer", "sub", 0)

    def token(**claims: object) -> str:
        now = int(time.time())
        base = {"sub": "erin", "aud": "kafka", "iss": "issuer", "iat": now, "exp": now + 60}
        return jwt.encode({**base, **claims}, key, algorithm="RS256", headers={"kid": "k1"})

    assert validator(token()).principal == "erin"
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(
        {
            "sub": "erin",
            "aud": "kafka",
            "iss": "issuer",
            "iat": int(time.time()),
            "exp": int(time.time()) + 60,
        },
        other,
        algorithm="RS256",
        headers={"kid": "k1"},
    )
    for bad in (token(aud="other"), token(exp=int(time.time()) - 10), token(iss="else"), forged):
        server = OAuthBearerServer(validator)
        assert server.step(f"n,,\x01auth=Bearer {bad}\x01\x01".encode()) == b'{"status":"invalid_token"}'


def test_principal_mapping_rules() -> None:
    dn = subject_name(
        {
            "subject": (
                (("countryName", "US"),),
                (("organizationName", "Acme, Inc"),),
                (("commonName", "Svc"),),
            )
        }
    )
    assert dn == "CN=Svc,O=Acme\\, Inc,C=US"
    assert PrincipalMapper("DEFAULT").principal(dn) == dn
    assert PrincipalMapper("RULE:^CN=([^,]+),.*$/$1/L, DEFAULT").principal(dn) == "svc"
    assert PrincipalMapper("RULE:^CN=(.*?),O=Other.*$/$1/").principal(dn) is None
    with pytest.raises(ConfigError):
        PrincipalMapper("RULE:nonsense")


def test_jaas_options_are_read_with_quotes_and_escapes() -> None:
    options = parse_jaas(
        "k", 'org.example.Module required user_a="p\\"w;d" user_b=plain debug="true";', "org.example.Module"
    )
    assert options == {"user_a": 'p"w;d', "user_b": "plain", "debug": "true"}
