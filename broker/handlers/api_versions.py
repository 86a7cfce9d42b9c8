"""ApiVersions: tell the client exactly which API versions this broker serves."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.requests.feature_levels import add_api_versions_features
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import ApiVersionsRequest, ApiVersionsResponse

# KIP-511: client software name and version must look like this, or Kafka answers INVALID_REQUEST.
_SOFTWARE_FIELD = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


async def handle_api_versions(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    if ctx.api_version >= 3 and not all(
        _SOFTWARE_FIELD.fullmatch(request[name] or "")
        for name in ("client_software_name", "client_software_version")
    ):
        return {"error_code": ErrorCode.INVALID_REQUEST, "api_keys": []}
    if ctx.api_version >= 3:
        ctx.broker.client_software.announce(
            ctx.client_address, request["client_software_name"], request["client_software_version"]
        )
    response: ApiVersionsResponse = {
        "error_code": ErrorCode.NONE,
        "api_keys": [
            {"api_key": a.key, "min_version": a.min_version, "max_version": a.max_version}
            for a in ctx.broker.supported.values()
        ],
    }
    add_api_versions_features(ctx, response)
    return response


HANDLERS = {ApiKey.API_VERSIONS: Served(handle_api_versions)}
