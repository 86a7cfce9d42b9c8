"""Delegation token APIs (KIP-48), answered as a Kafka broker without token authentication.

Odradek has no delegation tokens (no ``delegation.token.secret.key``), so it answers as such a
Kafka broker does, and Kafka's ``kafka-delegation-tokens`` tool prints the same refusal against
both: on PLAINTEXT listeners and to anonymous TLS clients DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
("not allowed on PLAINTEXT/1-way SSL channels"), elsewhere DELEGATION_TOKEN_AUTH_DISABLED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.services.security.authentication import ANONYMOUS
from broker.services.security.listener_security import SecurityProtocol
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        CreateDelegationTokenRequest,
        CreateDelegationTokenResponse,
        DescribeDelegationTokenRequest,
        DescribeDelegationTokenResponse,
        ExpireDelegationTokenRequest,
        RenewDelegationTokenRequest,
        RenewDelegationTokenResponse,
    )


def refusal(ctx: RequestContext) -> ErrorCode:
    """Kafka's ``allowTokenRequests`` first, then "token authentication is disabled"."""
    protocol = ctx.auth.security.protocol
    if protocol is SecurityProtocol.PLAINTEXT or (
        protocol is SecurityProtocol.SSL and ctx.principal == ANONYMOUS
    ):
        return ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED


async def handle_create(
    ctx: RequestContext, request: CreateDelegationTokenRequest
) -> CreateDelegationTokenResponse:
    return {
        "error_code": refusal(ctx),
        "principal_type": "",
        "principal_name": "",
        "token_requester_principal_type": "",
        "token_requester_principal_name": "",
        "issue_timestamp_ms": -1,
        "expiry_timestamp_ms": -1,
        "max_timestamp_ms": -1,
        "token_id": "",
        "hmac": b"",
        "throttle_time_ms": 0,
    }


async def handle_renew_or_expire(
    ctx: RequestContext, request: RenewDelegationTokenRequest | ExpireDelegationTokenRequest
) -> RenewDelegationTokenResponse:  # ExpireDelegationTokenResponse is the same struct
    return {"error_code": refusal(ctx), "expiry_timestamp_ms": -1, "throttle_time_ms": 0}


async def handle_describe(
    ctx: RequestContext, request: DescribeDelegationTokenRequest
) -> DescribeDelegationTokenResponse:
    return {"error_code": refusal(ctx), "tokens": [], "throttle_time_ms": 0}


HANDLERS = {
    ApiKey.CREATE_DELEGATION_TOKEN: Served(handle_create),
    ApiKey.RENEW_DELEGATION_TOKEN: Served(handle_renew_or_expire),
    ApiKey.EXPIRE_DELEGATION_TOKEN: Served(handle_renew_or_expire),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: Served(handle_describe),
}
