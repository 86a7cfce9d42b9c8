"""The authorization table covers every API the broker serves, and names one operation per
resource type wherever handlers ask without naming one."""

from __future__ import annotations

import pytest

from broker.handlers import load_handlers
from broker.requests.acl_checks import CHECKS, operation_for
from broker.services.security.acl_model import AclOperation, ResourceType
from wire.api_keys import ApiKey


def test_every_served_api_has_its_checks() -> None:
    assert sorted(set(load_handlers()) - set(CHECKS)) == []


def test_an_operation_not_in_the_table_is_a_programming_error() -> None:
    assert operation_for(ApiKey.PRODUCE, ResourceType.TOPIC) == AclOperation.WRITE
    assert operation_for(ApiKey.METADATA, ResourceType.TOPIC, AclOperation.CREATE) == AclOperation.CREATE
    with pytest.raises(LookupError):
        operation_for(ApiKey.METADATA, ResourceType.TOPIC)  # two operations: the caller must say which
    with pytest.raises(LookupError):
        operation_for(ApiKey.PRODUCE, ResourceType.TOPIC, AclOperation.READ)
    with pytest.raises(LookupError):
        operation_for(ApiKey.API_VERSIONS, ResourceType.CLUSTER)
