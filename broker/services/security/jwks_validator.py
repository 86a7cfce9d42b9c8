"""Signed JWTs checked against a JWKS file, Kafka's ``OAuthBearerValidatorCallbackHandler``
(``sasl.oauthbearer.jwks.endpoint.url=file:...``): signature, ``exp``, issuer and audience,
with PyJWT doing the cryptography.

A module of its own because PyJWT and the cryptography it loads cost about 70 ms of every
broker start: only a listener configured with this validator imports it
(:mod:`broker.services.security.listener_security`).
"""

from __future__ import annotations

import jwt

from broker.services.security.oauthbearer import InvalidToken, ValidToken, expiry_ms

_SIGNED_ALGORITHMS = ["RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512"]


class JwksValidator:
    """Signed JWTs checked against the keys of a JWKS document read from a file."""

    def __init__(
        self, jwks_text: str, audience: list[str], issuer: str | None, sub_claim: str, clock_skew_s: int
    ) -> None:
        self._keys = {key.key_id: key for key in jwt.PyJWKSet.from_json(jwks_text).keys}
        self._audience, self._issuer = audience or None, issuer or None
        self._sub_claim, self._skew = sub_claim, clock_skew_s

    def __call__(self, token: str) -> ValidToken:
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            key = self._keys.get(kid)
            if key is None:
                raise InvalidToken(f"no key with id {kid!r} in the JWKS")
            claims = jwt.decode(
                token,
                key.key,
                algorithms=_SIGNED_ALGORITHMS,
                audience=self._audience,
                issuer=self._issuer,
                leeway=self._skew,
                options={
                    "require": ["exp", "iat", self._sub_claim],
                    "verify_aud": self._audience is not None,
                },
            )
        except jwt.PyJWTError as exc:
            raise InvalidToken(str(exc)) from None
        except (ValueError, OverflowError, RecursionError) as exc:  # hostile headers or claims
            raise InvalidToken(f"malformed token: {type(exc).__name__}") from None
        principal = claims.get(self._sub_claim)
        if not isinstance(principal, str) or not principal:
            raise InvalidToken(f"no principal claim {self._sub_claim!r}")
        return ValidToken(principal, expiry_ms(claims["exp"]))
