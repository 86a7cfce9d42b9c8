"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), as Kafka validates them.

What ``kafka-configs --alter --add-config 'SCRAM-SHA-512=[password=...]' --entity-type users``
sends: the admin client salts and hashes the password itself, the broker derives and keeps
StoredKey/ServerKey (``broker.services.security.scram_store``).  Every error is per user, with Kafka's
codes and messages; changes that cannot be stored are answered REQUEST_TIMED_OUT, as Kafka does
when its controller cannot commit in time.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from broker.requests.acl_checks import cluster_authorized
from broker.requests.api_support import Served
from broker.requests.context import RequestContext
from broker.services.security.scram import MAX_ITERATIONS, MECHANISM_TYPES, MIN_ITERATIONS, ScramCredential
from broker.state.documents import DocumentUnavailable
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        AlterUserScramCredentialsRequest,
        AlterUserScramCredentialsRequestDeletions,
        AlterUserScramCredentialsRequestUpsertions,
        AlterUserScramCredentialsResponse,
        AlterUserScramCredentialsResponseResults,
        DescribeUserScramCredentialsRequest,
        DescribeUserScramCredentialsResponse,
        DescribeUserScramCredentialsResponseCredentialInfos,
        DescribeUserScramCredentialsResponseResults,
    )

_MECHANISM_NAMES = {number: name for name, number in MECHANISM_TYPES.items()}
MAX_SALT_BYTES = 1024
MAX_SALTED_PASSWORD_BYTES = 1024


def _result(
    user: str, code: ErrorCode = ErrorCode.NONE, message: str | None = None
) -> AlterUserScramCredentialsResponseResults:
    return {"user": user, "error_code": code, "error_message": message}


def _described(
    user: str,
    code: ErrorCode = ErrorCode.NONE,
    message: str | None = None,
    infos: list[DescribeUserScramCredentialsResponseCredentialInfos] | None = None,
) -> DescribeUserScramCredentialsResponseResults:
    return {"user": user, "error_code": code, "error_message": message, "credential_infos": infos or []}


async def handle_describe(
    ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    if not cluster_authorized(ctx):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None, "results": []}
    store = ctx.broker.scram_credentials
    wanted = request["users"]
    names = sorted(store.users()) if not wanted else [u["name"] for u in wanted]
    counts = Counter(names)
    results: list[DescribeUserScramCredentialsResponseResults] = []
    for name in counts:
        if counts[name] > 1:
            results.append(
                _described(
                    name,
                    ErrorCode.DUPLICATE_RESOURCE,
                    "Cannot describe SCRAM credentials for the same user twice in a single request",
                )
            )
            continue
        mechanisms = store.users().get(name)
        if not mechanisms:
            results.append(
                _described(
                    name,
                    ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to describe a user credential that does not exist",
                )
            )
            continue
        infos: list[DescribeUserScramCredentialsResponseCredentialInfos] = [
            {"mechanism": MECHANISM_TYPES[m], "iterations": c.iterations}
            for m, c in sorted(mechanisms.items())
        ]
        results.append(_described(name, infos=infos))
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "results": results}


def _check_upsertion(upsertion: AlterUserScramCredentialsRequestUpsertions) -> tuple[ErrorCode, str] | None:
    if not upsertion["name"]:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if upsertion["mechanism"] not in _MECHANISM_NAMES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if upsertion["iterations"] < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if upsertion["iterations"] > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    if not upsertion["salt"] or len(upsertion["salt"]) > MAX_SALT_BYTES:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt must be between 1 and 1024 bytes"
    if not upsertion["salted_password"] or len(upsertion["salted_password"]) > MAX_SALTED_PASSWORD_BYTES:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salted password must be between 1 and 1024 bytes"
    return None


async def handle_alter(
    ctx: RequestContext, request: AlterUserScramCredentialsRequest
) -> AlterUserScramCredentialsResponse:
    store = ctx.broker.scram_credentials
    # (the operation, and the same again when it is an upsertion, which has more fields)
    operations: list[
        tuple[AlterUserScramCredentialsRequestDeletions, AlterUserScramCredentialsRequestUpsertions | None]
    ] = [(d, None) for d in request["deletions"]] + [(u, u) for u in request["upsertions"]]
    counts = Counter(operation["name"] for operation, _ in operations)
    if not cluster_authorized(ctx):
        return {
            "throttle_time_ms": 0,
            "results": [_result(name, ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for name in counts],
        }
    errors: dict[str, tuple[ErrorCode, str]] = {}
    upserts: dict[tuple[str, str], ScramCredential] = {}
    deletions: set[tuple[str, str]] = set()
    for operation, upsertion in operations:
        name = operation["name"]
        if name in errors:
            continue
        if counts[name] > 1:
            errors[name] = (
                ErrorCode.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
            continue
        mechanism = _MECHANISM_NAMES.get(operation["mechanism"])
        if upsertion is None:
            if not name:
                errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
            elif mechanism is None:
                errors[name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
            elif store.lookup(name, mechanism) is None:
                errors[name] = (
                    ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist",
                )
            else:
                deletions.add((name, mechanism))
            continue
        problem = _check_upsertion(upsertion)
        if problem is None and store.full and name not in store.users():
            problem = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many SCRAM users on this broker")
        if problem is not None or mechanism is None:  # _check_upsertion refused an unknown mechanism
            errors[name] = problem or (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
            continue
        upserts[(name, mechanism)] = ScramCredential.from_salted_password(
            mechanism, bytes(upsertion["salt"]), bytes(upsertion["salted_password"]), upsertion["iterations"]
        )
    if upserts or deletions:
        try:
            await store.apply(upserts, deletions)
        except DocumentUnavailable as exc:
            for name, _ in (*upserts, *deletions):
                errors[name] = (ErrorCode.REQUEST_TIMED_OUT, str(exc))
    results = [_result(name, *errors[name]) if name in errors else _result(name) for name in counts]
    return {"throttle_time_ms": 0, "results": results}


HANDLERS = {
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: Served(handle_describe),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: Served(handle_alter),
}
