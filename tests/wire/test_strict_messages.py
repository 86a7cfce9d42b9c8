"""Under the test suites' ODRADEK_STRICT_MESSAGES=1, a misspelt field is an error, not a 0."""

from __future__ import annotations

import pytest

from wire.api_keys import ApiKey
from wire.codec import encode_response
from wire.codegen import generate, strict_messages
from wire.errors import EncodeError
from wire.schemas import ALL_APIS


def test_the_suites_run_with_strict_encoders() -> None:
    assert strict_messages(), "the repository's conftest.py sets ODRADEK_STRICT_MESSAGES=1"


def test_an_undeclared_key_is_refused_at_any_depth() -> None:
    with pytest.raises(EncodeError, match=r"message has undeclared fields \['eror_code'\]"):
        encode_response(ApiKey.HEARTBEAT, 4, {"eror_code": 27})
    misspelt = {"topics": [{"name": "t", "partitons": []}]}
    with pytest.raises(EncodeError, match=r"topics\[\]\. has undeclared fields \['partitons'\]"):
        encode_response(ApiKey.METADATA, 12, misspelt)


def test_fields_of_other_versions_are_declared_keys() -> None:
    """A handler writes one dict for every version; fields a version lacks are left out."""
    encode_response(ApiKey.HEARTBEAT, 0, {"error_code": 0, "throttle_time_ms": 5})


def test_production_encoders_leave_the_check_out(monkeypatch) -> None:
    monkeypatch.delenv("ODRADEK_STRICT_MESSAGES")
    lenient = generate(ALL_APIS[ApiKey.HEARTBEAT], 4, "response")
    assert lenient.encode({"eror_code": 27}) == lenient.encode({})
