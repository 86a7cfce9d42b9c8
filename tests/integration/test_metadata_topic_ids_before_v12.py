"""Metadata v10-11 declare topic ids but may not use them (found by the live fuzzer).

A v10 request naming a topic by id with a null name made the handler answer a null name,
which the v10 response cannot encode: an internal error, logged at ERROR, and a closed
connection.  Kafka refuses such requests (InvalidRequestException): every topic is answered
with INVALID_REQUEST, a null name as "".
"""

from __future__ import annotations

import pytest

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


@pytest.mark.parametrize("version", [10, 11])
def test_topic_ids_before_v12_are_an_invalid_request(odradek_broker: OdradekProcess, version: int) -> None:
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic("named")
        topic_id = client.metadata(["named"])["topics"][0]["topic_id"]
        response = client.request(
            ApiKey.METADATA,
            version,
            {"topics": [{"name": None, "topic_id": topic_id}, {"name": "named", "topic_id": topic_id}]},
        )
        assert [(t["name"], t["topic_id"], t["error_code"]) for t in response["topics"]] == [
            ("", topic_id, ErrorCode.INVALID_REQUEST),
            ("named", topic_id, ErrorCode.INVALID_REQUEST),
        ]
        # Same connection: it was answered, not closed.
        assert client.metadata(["named"])["topics"][0]["error_code"] == ErrorCode.NONE
    assert " ERROR " not in odradek_broker.log_text()
