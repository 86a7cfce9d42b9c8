"""A handler's response with a field no version of it declares never reaches the client as a
wrong answer: the encoder refuses it (in production too, see wire/codegen.py), the broker logs
the failure at ERROR with its request and closes the connection, and the client retries."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import trio

from broker.requests.context import RequestContext
from broker.requests.dispatch import with_throttle
from compat_tests.kit.in_process import running_broker
from compat_tests.kit.raw_protocol import closed_by_peer, connect, request_frame
from tests.broker.test_server import DEADLINE_S
from wire.api_keys import ApiKey


async def _misspelt_heartbeat(ctx: RequestContext, request: object) -> dict[str, object]:
    return {"throttle_time_ms": 0, "eror_code": 27}  # REBALANCE_IN_PROGRESS, misspelt


async def test_an_undeclared_field_closes_the_connection_and_is_logged(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.ERROR, logger="broker.requests.dispatch")
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path) as (broker, port):
            served = broker.served[ApiKey.HEARTBEAT]
            broker.served[ApiKey.HEARTBEAT] = dataclasses.replace(served, handler=_misspelt_heartbeat)
            stream = await connect(port)
            await stream.send_all(
                request_frame(ApiKey.HEARTBEAT, 4, {"group_id": "g", "generation_id": 1, "member_id": "m"})
            )
            assert await closed_by_peer(stream)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "Heartbeat v4" in errors[0].getMessage()
    assert "undeclared fields ['eror_code']" in str(errors[0].exc_info[1])


def test_throttle_time_goes_only_into_responses_that_declare_it() -> None:
    """SaslHandshake (and SaslAuthenticate, DescribeQuorum, WriteTxnMarkers) have no
    throttle_time_ms in any version: a throttled client is told by the muted channel alone."""
    handshake = {"error_code": 0, "mechanisms": ["PLAIN"]}
    assert with_throttle(ApiKey.SASL_HANDSHAKE, handshake, 250) == handshake
    heartbeat = {"error_code": 0, "throttle_time_ms": 100}
    assert with_throttle(ApiKey.HEARTBEAT, heartbeat, 250) == {"error_code": 0, "throttle_time_ms": 250}
