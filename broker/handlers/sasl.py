"""SaslHandshake and SaslAuthenticate: the connection's SASL exchange (``broker.services.security``).

On a listener without SASL, or after authentication with no exchange to continue, both are
answered ILLEGAL_SASL_STATE as Kafka's KafkaApis answers them.  A refused mechanism or
credential is answered, then the connection closes (``ConnectionAuth.failed``); a refused
credential only after ``connection.failed.authentication.delay.ms``, which slows password
guessing as Kafka's delayed close does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.services.security.mechanism import AuthenticationFailed
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        SaslAuthenticateRequest,
        SaslAuthenticateResponse,
        SaslHandshakeRequest,
        SaslHandshakeResponse,
    )


async def handle_sasl_handshake(ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    auth = ctx.auth
    enabled = list(auth.security.mechanisms)
    if not auth.in_handshake:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": enabled}
    if not auth.begin(request["mechanism"], ctx.api_version):
        auth.failed = True
        return {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled}
    return {"error_code": ErrorCode.NONE, "mechanisms": enabled}


async def handle_sasl_authenticate(
    ctx: RequestContext, request: SaslAuthenticateRequest
) -> SaslAuthenticateResponse:
    auth = ctx.auth
    if auth.server is None:
        return {
            "error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate request received after successful authentication",
            "auth_bytes": b"",
            "session_lifetime_ms": 0,
        }
    try:
        answer, lifetime_ms = auth.authenticate(bytes(request["auth_bytes"]))
    except AuthenticationFailed as exc:
        await trio.sleep(auth.security.failed_auth_delay_s)
        return {
            "error_code": ErrorCode.SASL_AUTHENTICATION_FAILED,
            "error_message": str(exc),
            "auth_bytes": b"",
            "session_lifetime_ms": 0,
        }
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "auth_bytes": answer,
        "session_lifetime_ms": lifetime_ms,
    }


HANDLERS = {
    ApiKey.SASL_HANDSHAKE: Served(handle_sasl_handshake),
    ApiKey.SASL_AUTHENTICATE: Served(handle_sasl_authenticate),
}
