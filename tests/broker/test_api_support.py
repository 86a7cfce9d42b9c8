"""The ApiVersions table is derived from the schema declarations and the handlers' ranges."""

from __future__ import annotations

import pytest

from broker.handlers import load_handlers
from broker.requests.api_support import NOT_SERVED, Served, supported_apis
from wire.api_keys import ApiKey, api_name
from wire.schemas import ALL_APIS


async def _unused(ctx, request):  # a handler the table never calls
    return {}


def test_kafka_4_minimums_and_the_capped_versions_are_what_is_advertised() -> None:
    supported = supported_apis(load_handlers())
    ranges = {key: (s.min_version, s.max_version) for key, s in supported.items()}
    # KIP-896 minimums (KAFKA-FACTS.md); Produce and JoinGroup keep 0 for old librdkafka builds.
    assert ranges[ApiKey.PRODUCE][0] == 0 and ranges[ApiKey.JOIN_GROUP][0] == 0
    assert ranges[ApiKey.FETCH][0] == 4 and ranges[ApiKey.OFFSET_COMMIT][0] == 2
    assert ranges[ApiKey.CREATE_TOPICS][0] == 2 and ranges[ApiKey.OFFSET_FOR_LEADER_EPOCH][0] == 2
    # Declared but not served yet, each with its reason in the handler module.
    assert ranges[ApiKey.LIST_OFFSETS][1] == 10 < ALL_APIS[ApiKey.LIST_OFFSETS].versions.high
    assert list(supported) == sorted(supported), "ApiVersions lists keys in order"
    for key, support in supported.items():
        assert support.min_version in ALL_APIS[key].versions
        assert support.max_version in ALL_APIS[key].versions


def test_every_declared_api_is_named_as_kafka_names_it() -> None:
    names = {api.name for api in ALL_APIS.values()}
    assert {"Produce", "OffsetForLeaderEpoch", "InitProducerId", "ApiVersions"} <= names
    assert api_name(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS) == "DescribeUserScramCredentials"
    assert api_name(9999) == "API 9999"


def test_a_capped_range_needs_a_reason_and_a_handler_needs_a_declaration() -> None:
    with pytest.raises(ValueError, match="must say why"):
        Served(_unused, highest=1)
    with pytest.raises(ValueError, match="no closed range of declared versions"):
        supported_apis({ApiKey.VOTE: Served(_unused)})  # a controller's API: brokers declare none
    with pytest.raises(ValueError, match="no declared version is served"):
        supported_apis({ApiKey.HEARTBEAT: Served(_unused, highest=-1, why_not_newer="test")})


def test_every_declared_api_is_served_or_says_why_not() -> None:
    served = set(load_handlers())
    declared = set(ALL_APIS)
    assert not served & set(NOT_SERVED), "an API with a handler is served: drop it from NOT_SERVED"
    assert declared - served == set(NOT_SERVED), "a declared API with no handler needs a reason in NOT_SERVED"
    assert all(NOT_SERVED.values()), "every reason says something"
