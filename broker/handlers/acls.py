"""CreateAcls, DescribeAcls, DeleteAcls: the built-in authorizer's ACLs, as Kafka's AclApis.

All three need the cluster operation the authorization table names (ALTER to change, DESCRIBE
to list) and answer SECURITY_DISABLED when no authorizer is configured.  New ACLs are
validated as the KRaft controller does, with its messages; a change is stored durably before
it is answered (``broker.services.security.acl_store``), and one that cannot be stored is
answered REQUEST_TIMED_OUT, as Kafka does when its controller cannot commit in time.  One
request creates or removes at most ``MAX_ACLS_PER_REQUEST`` ACLs (Kafka's controller bound for
one operation), and the broker holds at most ``authorizer.max.acls``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.requests.acl_checks import cluster_authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.services.security.acl_model import AclBinding, AclFilter
from broker.state.documents import DocumentUnavailable
from wire.api_keys import ApiKey, api_name
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        CreateAclsRequest,
        CreateAclsResponse,
        CreateAclsResponseResults,
        DeleteAclsRequest,
        DeleteAclsResponse,
        DeleteAclsResponseFilterResults,
        DeleteAclsResponseMatchingAcls,
        DescribeAclsRequest,
        DescribeAclsResponse,
        DescribeAclsResponseAcls,
        DescribeAclsResponseResources,
    )

MAX_ACLS_PER_REQUEST = 10_000
"""Kafka's ``MAX_RECORDS_PER_USER_OP``: ACLs one CreateAcls or DeleteAcls may change."""

NO_AUTHORIZER = "No Authorizer is configured."
"""Kafka's message for CreateAcls and DeleteAcls; DescribeAcls says it differently."""


def _refusal(ctx: RequestContext, no_authorizer: str = NO_AUTHORIZER) -> tuple[ErrorCode, str] | None:
    """Why the request is refused as a whole: no permission on the cluster, or no authorizer."""
    if not cluster_authorized(ctx):
        return (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            f"Request {api_name(ctx.header.api_key)} is not authorized.",
        )
    if ctx.broker.acls is None:
        return ErrorCode.SECURITY_DISABLED, no_authorizer
    return None


def _error(code: ErrorCode, message: str | None) -> CreateAclsResponseResults:
    return {"error_code": code, "error_message": message}


_OK = _error(ErrorCode.NONE, None)


async def handle_create_acls(ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
    creations = request["creations"]
    refusal = _refusal(ctx)
    store = ctx.broker.acls
    if refusal is not None or store is None:
        return {"throttle_time_ms": 0, "results": [_error(*refusal) for _ in creations] if refusal else []}
    if len(creations) > MAX_ACLS_PER_REQUEST:
        message = f"Cannot create more than {MAX_ACLS_PER_REQUEST} acls in a single operation."
        return {
            "throttle_time_ms": 0,
            "results": [_error(ErrorCode.INVALID_REQUEST, message) for _ in creations],
        }
    results: list[CreateAclsResponseResults] = []
    wanted: list[tuple[int, AclBinding]] = []
    for creation in creations:
        binding = AclBinding.from_codes(
            creation["resource_type"],
            creation["resource_name"],
            creation["resource_pattern_type"],
            creation["principal"],
            creation["host"],
            creation["operation"],
            creation["permission_type"],
        )
        invalid = binding.validation_error()
        results.append(_OK if invalid is None else _error(ErrorCode.INVALID_REQUEST, invalid))
        if invalid is None:
            wanted.append((len(results) - 1, binding))

    def add(current: list[AclBinding]) -> list[AclBinding]:
        acls = dict.fromkeys(current)
        for index, binding in wanted:
            results[index] = _OK  # (again, when a cluster reruns the change on newer ACLs)
            if binding in acls:
                continue  # Kafka keeps one copy and reports success
            if len(acls) >= store.max_acls:
                results[index] = _error(
                    ErrorCode.POLICY_VIOLATION,
                    f"The broker holds at most {store.max_acls} ACLs (authorizer.max.acls)",
                )
                continue
            acls[binding] = None
        return list(acls)

    if wanted:
        try:
            await store.update(add)
        except DocumentUnavailable as exc:
            for index, _ in wanted:
                results[index] = _error(ErrorCode.REQUEST_TIMED_OUT, str(exc))
    return {"throttle_time_ms": 0, "results": results}


def _described(acls: list[AclBinding]) -> list[DescribeAclsResponseResources]:
    """DescribeAcls groups ACLs by resource pattern."""
    by_pattern: dict[tuple[int, str, int], list[DescribeAclsResponseAcls]] = {}
    for acl in acls:
        key = (acl.resource_type, acl.resource_name, acl.pattern_type)
        by_pattern.setdefault(key, []).append(
            {
                "principal": acl.principal,
                "host": acl.host,
                "operation": acl.operation,
                "permission_type": acl.permission,
            }
        )
    return [
        {"resource_type": kind, "resource_name": name, "pattern_type": pattern, "acls": entries}
        for (kind, name, pattern), entries in by_pattern.items()
    ]


def _describe_refused(code: ErrorCode, message: str | None) -> DescribeAclsResponse:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "resources": []}


async def handle_describe_acls(ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    refusal = _refusal(ctx, "No Authorizer is configured on the broker")
    if refusal is not None or ctx.broker.authorizer is None:
        return _describe_refused(*refusal or (ErrorCode.SECURITY_DISABLED, None))
    acl_filter = AclFilter.from_request(request)
    invalid = acl_filter.validation_error()
    if invalid is not None:
        return _describe_refused(ErrorCode.INVALID_REQUEST, invalid)
    resources = _described(ctx.broker.authorizer.matching(acl_filter))
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "resources": resources,
    }


def _deleted(acl: AclBinding) -> DeleteAclsResponseMatchingAcls:
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "resource_type": acl.resource_type,
        "resource_name": acl.resource_name,
        "pattern_type": acl.pattern_type,
        "principal": acl.principal,
        "host": acl.host,
        "operation": acl.operation,
        "permission_type": acl.permission,
    }


def _filter_result(
    code: ErrorCode, message: str | None, matching: list[DeleteAclsResponseMatchingAcls]
) -> DeleteAclsResponseFilterResults:
    return {"error_code": code, "error_message": message, "matching_acls": matching}


async def handle_delete_acls(ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
    refusal = _refusal(ctx)
    store = ctx.broker.acls
    if refusal is not None or store is None:
        return {
            "throttle_time_ms": 0,
            "filter_results": [_filter_result(*refusal, []) for _ in request["filters"]] if refusal else [],
        }
    filters = [AclFilter.from_request(f) for f in request["filters"]]
    problems = [acl_filter.validation_error() for acl_filter in filters]
    results: list[DeleteAclsResponseFilterResults] = []

    def remove(current: list[AclBinding]) -> list[AclBinding]:
        results.clear()  # (filled again when a cluster reruns the change on newer ACLs)
        doomed: set[AclBinding] = set()
        for acl_filter, invalid in zip(filters, problems, strict=True):
            matched = [] if invalid else [acl for acl in current if acl_filter.matches(acl)]
            if len(doomed.union(matched)) > MAX_ACLS_PER_REQUEST:
                invalid = f"Cannot remove more than {MAX_ACLS_PER_REQUEST} acls in a single delete operation."
            else:
                doomed.update(matched)
            results.append(
                _filter_result(ErrorCode.INVALID_REQUEST, invalid, [])
                if invalid
                else _filter_result(ErrorCode.NONE, None, [_deleted(acl) for acl in matched])
            )
        return [acl for acl in current if acl not in doomed]

    try:
        await store.update(remove)
    except DocumentUnavailable as exc:
        results = [
            _filter_result(ErrorCode.INVALID_REQUEST, invalid, [])
            if invalid
            else _filter_result(ErrorCode.REQUEST_TIMED_OUT, str(exc), [])
            for invalid in problems
        ]
    return {"throttle_time_ms": 0, "filter_results": results}


HANDLERS = {
    ApiKey.DESCRIBE_ACLS: Served(handle_describe_acls),
    ApiKey.CREATE_ACLS: Served(handle_create_acls),
    ApiKey.DELETE_ACLS: Served(handle_delete_acls),
}
