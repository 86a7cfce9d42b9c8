"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), as Kafka validates them.

What ``kafka-configs --alter --add-config 'SCRAM-SHA-512=[password=...]' --entity-type users``
sends: the admin client salts and hashes the password itself, the broker derives and keeps
StoredKey/ServerKey (``broker.services.security.scram_store``).  Every error is per user, with Kafka's
codes and messages.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from broker.requests.api_support import Served
from broker.requests.authorization import cluster_authorized
from broker.requests.context import RequestContext
from broker.services.security.scram import MAX_ITERATIONS, MECHANISM_TYPES, MIN_ITERATIONS, ScramCredential
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

_MECHANISM_NAMES = {number: name for name, number in MECHANISM_TYPES.items()}
MAX_SALT_BYTES = 1024
MAX_SALTED_PASSWORD_BYTES = 1024


def _result(user: str, code: ErrorCode = ErrorCode.NONE, message: str | None = None) -> dict[str, Any]:
    return {"user": user, "error_code": code, "error_message": message}


async def handle_describe(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if not cluster_authorized(ctx):
        return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None, "results": []}
    store = ctx.broker.scram_credentials
    wanted = request["users"]
    names = sorted(store.users()) if not wanted else [u["name"] for u in wanted]
    counts = Counter(names)
    results = []
    for name in counts:
        if counts[name] > 1:
            results.append(
                _result(
                    name,
                    ErrorCode.DUPLICATE_RESOURCE,
                    "Cannot describe SCRAM credentials for the same user twice in a single request",
                )
            )
            continue
        mechanisms = store.users().get(name)
        if not mechanisms:
            results.append(
                _result(
                    name,
                    ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to describe a user credential that does not exist",
                )
            )
            continue
        infos = [
            {"mechanism": MECHANISM_TYPES[m], "iterations": c.iterations}
            for m, c in sorted(mechanisms.items())
        ]
        results.append({**_result(name), "credential_infos": infos})
    for result in results:
        result.setdefault("credential_infos", [])
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "results": results}


def _check_upsertion(upsertion: dict[str, Any]) -> tuple[ErrorCode, str] | None:
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


async def handle_alter(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    store = ctx.broker.scram_credentials
    operations = [("delete", d) for d in request["deletions"]] + [
        ("upsert", u) for u in request["upsertions"]
    ]
    counts = Counter(operation["name"] for _, operation in operations)
    if not cluster_authorized(ctx):
        return {
            "throttle_time_ms": 0,
            "results": [_result(name, ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for name in counts],
        }
    errors: dict[str, tuple[ErrorCode, str]] = {}
    upserts: dict[tuple[str, str], ScramCredential] = {}
    deletions: set[tuple[str, str]] = set()
    for kind, operation in operations:
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
        if kind == "delete":
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
        problem = _check_upsertion(operation)
        if problem is None and store.full and name not in store.users():
            problem = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many SCRAM users on this broker")
        if problem is not None:
            errors[name] = problem
            continue
        upserts[(name, mechanism)] = ScramCredential.from_salted_password(
            mechanism, bytes(operation["salt"]), bytes(operation["salted_password"]), operation["iterations"]
        )
    if upserts or deletions:
        await store.apply(upserts, deletions)
    results = [_result(name, *errors[name]) if name in errors else _result(name) for name in counts]
    return {"throttle_time_ms": 0, "results": results}


HANDLERS = {
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: Served(handle_describe),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: Served(handle_alter),
}
