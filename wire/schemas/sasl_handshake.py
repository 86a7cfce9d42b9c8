"""SaslHandshake (key 17): choose a SASL mechanism (declared for later SASL support).

Quirks clients rely on:

- Never flexible, and its version cannot be bumped (KAFKA-9577: clients <= 2.4 negotiate
  it wrongly).  Sent with request header v1 and answered with response header v0.
- Version 0: after the handshake the client sends raw, size-prefixed SASL tokens outside
  the Kafka framing.  Version 1: tokens travel in SaslAuthenticate requests.
- An unsupported mechanism is ``UNSUPPORTED_SASL_MECHANISM`` with the enabled
  ``mechanisms`` listed.
"""

from wire.api_keys import ApiKey
from wire.schema import F, api

SASL_HANDSHAKE = api(
    ApiKey.SASL_HANDSHAKE,
    "0-1",
    flexible="none",
    request=(F("mechanism", "string"),),
    response=(
        F("error_code", "int16"),
        F("mechanisms", "[]string"),
    ),
)
