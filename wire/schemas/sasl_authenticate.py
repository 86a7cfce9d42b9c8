"""SaslAuthenticate (key 36): carry SASL tokens after SaslHandshake v1 (declared for later).

Quirks clients rely on:

- ``auth_bytes`` are opaque mechanism tokens (e.g. PLAIN's ``\\0user\\0password``, the
  SCRAM client-first/final messages).  A failure is ``SASL_AUTHENTICATION_FAILED`` with an
  ``error_message``; the broker then closes the connection.
- ``session_lifetime_ms`` (v1+, KIP-368) is 0 when sessions do not expire; otherwise the
  client re-authenticates before it elapses.  Version 2 is the first flexible version.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

SASL_AUTHENTICATE = api(
    ApiKey.SASL_AUTHENTICATE,
    "0-2",
    flexible="2+",
    request=(F("auth_bytes", "bytes"),),
    response=(
        F("error_code", "int16"),
        F("error_message", "string", "0+", nullable="0+"),
        F("auth_bytes", "bytes"),
        F("session_lifetime_ms", "int64", "1+"),
    ),
)
