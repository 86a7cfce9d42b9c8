"""A misspelt field is an error, not a 0, in production as in the tests."""

from __future__ import annotations

import pytest

from wire.api_keys import ApiKey
from wire.codec import encode_response
from wire.codegen import generate
from wire.errors import EncodeError
from wire.schemas import ALL_APIS


def test_an_undeclared_key_is_refused_at_any_depth() -> None:
    with pytest.raises(EncodeError, match=r"message has undeclared fields \['eror_code'\]"):
        encode_response(ApiKey.HEARTBEAT, 4, {"eror_code": 27})
    misspelt = {"topics": [{"name": "t", "partitons": []}]}
    with pytest.raises(EncodeError, match=r"topics\[\]\. has undeclared fields \['partitons'\]"):
        encode_response(ApiKey.METADATA, 12, misspelt)


def test_fields_of_other_versions_are_declared_keys() -> None:
    """A handler writes one dict for every version; fields a version lacks are left out."""
    encode_response(ApiKey.HEARTBEAT, 0, {"error_code": 0, "throttle_time_ms": 5})


def test_the_check_does_not_depend_on_the_environment(monkeypatch) -> None:
    """It once ran only under ODRADEK_STRICT_MESSAGES=1, which the test suites set."""
    monkeypatch.delenv("ODRADEK_STRICT_MESSAGES", raising=False)
    with pytest.raises(EncodeError, match="undeclared"):
        generate(ALL_APIS[ApiKey.HEARTBEAT], 4, "response").encode({"eror_code": 27})


def test_only_the_benchmark_leaves_the_check_out() -> None:
    lenient = generate(ALL_APIS[ApiKey.HEARTBEAT], 4, "response", strict=False)
    assert lenient.encode({"eror_code": 27}) == lenient.encode({})
