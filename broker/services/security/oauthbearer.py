"""SASL/OAUTHBEARER (RFC 7628) with Kafka's two token validators.

- Unsecured JWS (``alg: none``), Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler``:
  for development, configured by the ``unsecuredValidator*`` options of the listener's
  ``OAuthBearerLoginModule`` JAAS line.
- Signed JWTs checked against a JWKS file (``sasl.oauthbearer.jwks.endpoint.url=file:...``),
  Kafka's ``OAuthBearerValidatorCallbackHandler``: in :mod:`broker.services.security.jwks_validator`.

As in Kafka, a refused token is first answered with an RFC 7628 error challenge
(``{"status":"invalid_token"}``); the client acknowledges with ``0x01`` and only then gets
SASL_AUTHENTICATION_FAILED.  The token's expiry bounds the session (KIP-368).  The unsecured
validator compares ``exp`` with the broker's clock (``log.clock``), so a test that moves the
broker's time moves token expiry with it.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from broker.services.security.mechanism import AuthenticationFailed, SaslServer
from log.clock import Clock, wall_clock_ms

OAUTHBEARER_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
JWKS_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
_SEPARATOR = b"\x01"
_INVALID_TOKEN = b'{"status":"invalid_token"}'


class InvalidToken(Exception):
    """A token the validator refuses; the message says why."""


@dataclass(frozen=True, slots=True)
class ValidToken:
    principal: str
    expires_at_ms: int


TokenValidator = Callable[[str], ValidToken]


def _no_constants(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def expiry_ms(value: object) -> int:
    """A JWT ``exp`` (seconds) in ms; InvalidToken unless it is a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidToken("no usable expiration time (exp) claim")
    if abs(value) > 1e13:
        raise InvalidToken("expiration time (exp) out of range")
    return int(value * 1000)


def _b64url_json(part: str) -> dict[str, Any]:
    try:
        value = json.loads(
            base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)), parse_constant=_no_constants
        )
    except (binascii.Error, ValueError, RecursionError) as exc:  # hostile nesting, NaN, bad bytes
        raise InvalidToken(f"malformed token part: {type(exc).__name__}") from None
    if not isinstance(value, dict):
        raise InvalidToken("token part is not a JSON object")
    return value


@dataclass(frozen=True, slots=True)
class UnsecuredValidator:
    """Kafka's unsecured (``alg: none``) validation, with its JAAS options."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0
    clock: Clock = field(default=wall_clock_ms, compare=False, repr=False)  # the broker's (log.clock)

    @classmethod
    def from_options(cls, options: dict[str, str], clock: Clock = wall_clock_ms) -> UnsecuredValidator:
        required = options.get("unsecuredValidatorRequiredScope", "")
        return cls(
            options.get("unsecuredValidatorPrincipalClaimName", "sub"),
            options.get("unsecuredValidatorScopeClaimName", "scope"),
            tuple(s for s in required.replace(",", " ").split() if s),
            int(options.get("unsecuredValidatorAllowableClockSkewMs", "0")),
            clock,
        )

    def __call__(self, token: str) -> ValidToken:
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("an unsecured JWS has three dot-separated parts")
        header, claims = _b64url_json(parts[0]), _b64url_json(parts[1])
        if header.get("alg") != "none":
            raise InvalidToken(f"unsecured token must have alg none, not {header.get('alg')!r}")
        principal = claims.get(self.principal_claim)
        if not isinstance(principal, str) or not principal:
            raise InvalidToken(f"no principal claim {self.principal_claim!r}")
        expires_ms = expiry_ms(claims.get("exp"))
        if expires_ms + self.clock_skew_ms <= self.clock():
            raise InvalidToken("the token has expired")
        scope = claims.get(self.scope_claim, [])
        scopes = set(scope.split() if isinstance(scope, str) else scope if isinstance(scope, list) else [])
        missing = [s for s in self.required_scope if s not in scopes]
        if missing:
            raise InvalidToken(f"insufficient scope: {missing} required")
        return ValidToken(principal, expires_ms)


class OAuthBearerServer(SaslServer):
    def __init__(self, validate: TokenValidator) -> None:
        super().__init__()
        self._validate = validate
        self._failure: str | None = None

    def step(self, token: bytes) -> bytes:
        if self._failure is not None:
            # The client's acknowledgement of our error challenge (RFC 7628 section 3.2.3);
            # Kafka fails with the challenge itself as the message, and logs the reason.
            raise AuthenticationFailed(_INVALID_TOKEN.decode() + f" ({self._failure})")
        gs2, sep, rest = token.partition(_SEPARATOR)
        if not sep or not gs2.startswith((b"n,", b"y,")):
            raise AuthenticationFailed("Invalid OAUTHBEARER client first message")
        bearer = None
        for item in rest.split(_SEPARATOR):
            name, eq, value = item.partition(b"=")
            if eq and name == b"auth":
                scheme, _, bearer_value = value.partition(b" ")
                if scheme.lower() == b"bearer":
                    bearer = bearer_value.decode(errors="replace").strip()
        if not bearer:
            raise AuthenticationFailed("Invalid OAUTHBEARER client first message: no bearer token")
        try:
            valid = self._validate(bearer)
        except InvalidToken as exc:
            self._failure = str(exc)
            return _INVALID_TOKEN
        authzid = gs2.split(b",")[1]
        if authzid and authzid.removeprefix(b"a=").decode(errors="replace") != valid.principal:
            raise AuthenticationFailed(
                "Authentication failed: Authorization id does not match the principal of the token"
            )
        self._succeed(valid.principal)
        self.expires_at_ms = valid.expires_at_ms
        return b""
