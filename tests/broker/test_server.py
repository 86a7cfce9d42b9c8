"""The trio server over real sockets: framing, version negotiation, hostile input.

The broker runs in-process on an ephemeral loopback port (:mod:`compat_tests.kit.in_process`);
requests are raw frames built with the project's codecs (:mod:`compat_tests.kit.raw_protocol`)
so that each test controls the exact bytes on the wire.
"""

from __future__ import annotations

import struct
from pathlib import Path

import trio

from compat_tests.kit.in_process import running_broker
from compat_tests.kit.raw_protocol import closed_by_peer, connect, receive_frame, request_frame
from wire.api_keys import ApiKey
from wire.codec import decode_response
from wire.error_codes import ErrorCode

DEADLINE_S = 20


async def test_api_versions_v3_advertises_what_is_served(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path) as (_broker, port):
            stream = await connect(port)
            await stream.send_all(
                request_frame(
                    ApiKey.API_VERSIONS,
                    3,
                    {"client_software_name": "odradek-test", "client_software_version": "1.0"},
                    correlation_id=7,
                )
            )
            response = await receive_frame(stream)
            correlation_id = struct.unpack_from(">i", response)[0]
            assert correlation_id == 7
            body = decode_response(ApiKey.API_VERSIONS, 3, response, 4)  # response header v0 even for v3
            assert body["error_code"] == ErrorCode.NONE
            ranges = {a["api_key"]: (a["min_version"], a["max_version"]) for a in body["api_keys"]}
            assert ranges[ApiKey.PRODUCE] == (0, 13)  # min 0 advertised for old librdkafka
            assert ranges[ApiKey.FETCH] == (4, 18)  # Fetch 13+ addresses topics by their persistent ids
            assert ranges[ApiKey.METADATA] == (0, 13)
            assert ApiKey.API_VERSIONS in ranges and ApiKey.INIT_PRODUCER_ID in ranges


async def test_api_versions_unknown_version_gets_v0_error_with_ranges(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path) as (_broker, port):
            stream = await connect(port)
            # A future ApiVersions v9 whose body we cannot know: header v2, then junk.
            header = struct.pack(">hhih", ApiKey.API_VERSIONS, 9, 11, 4) + b"test" + b"\x00"
            payload = header + b"\x01\x02\x03"
            await stream.send_all(struct.pack(">i", len(payload)) + payload)
            response = await receive_frame(stream)
            assert struct.unpack_from(">i", response)[0] == 11
            body = decode_response(ApiKey.API_VERSIONS, 0, response, 4)
            assert body["error_code"] == ErrorCode.UNSUPPORTED_VERSION
            assert any(
                a["api_key"] == ApiKey.API_VERSIONS and a["max_version"] == 4 for a in body["api_keys"]
            )


async def test_oversized_frame_closes_only_that_connection(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, socket_request_max_bytes="1000") as (_broker, port):
            bystander = await connect(port)
            hostile = await connect(port)
            await hostile.send_all(struct.pack(">i", 1_000_000_000))
            assert await closed_by_peer(hostile)
            await bystander.send_all(request_frame(ApiKey.API_VERSIONS, 0, {}))
            body = decode_response(ApiKey.API_VERSIONS, 0, await receive_frame(bystander), 4)
            assert body["error_code"] == ErrorCode.NONE


async def test_garbage_and_unknown_apis_close_the_connection(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path) as (_broker, port):
            for payload in (
                b"\xff" * 3,
                struct.pack(">hhih", 999, 0, 1, -1),
                struct.pack(">hhih", ApiKey.METADATA, 99, 1, -1),
            ):
                stream = await connect(port)
                await stream.send_all(struct.pack(">i", len(payload)) + payload)
                assert await closed_by_peer(stream)
            # a truncated Metadata body is a decode error, not a crash
            stream = await connect(port)
            truncated = request_frame(ApiKey.METADATA, 9, {"topics": [{"name": "t"}]})[:-3]
            await stream.send_all(struct.pack(">i", len(truncated) - 4) + truncated[4:])
            assert await closed_by_peer(stream)
            healthy = await connect(port)
            await healthy.send_all(request_frame(ApiKey.API_VERSIONS, 0, {}))
            assert (
                decode_response(ApiKey.API_VERSIONS, 0, await receive_frame(healthy), 4)["error_code"]
                == ErrorCode.NONE
            )


async def test_pipelined_requests_are_answered_in_order(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path) as (_broker, port):
            stream = await connect(port)
            burst = b"".join(
                request_frame(
                    ApiKey.METADATA,
                    12,
                    {"topics": None, "allow_auto_topic_creation": False},
                    correlation_id=i,
                )
                if i % 2
                else request_frame(ApiKey.API_VERSIONS, 0, {}, correlation_id=i)
                for i in range(50)
            )
            await stream.send_all(burst)
            seen = [struct.unpack_from(">i", await receive_frame(stream))[0] for _ in range(50)]
            assert seen == list(range(50))


async def test_connection_limit_is_enforced(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_broker(tmp_path, max_connections_per_ip="2") as (_broker, port):
            first, second = await connect(port), await connect(port)
            third = await connect(port)
            assert await closed_by_peer(third)
            await first.send_all(request_frame(ApiKey.API_VERSIONS, 0, {}))
            assert (
                decode_response(ApiKey.API_VERSIONS, 0, await receive_frame(first), 4)["error_code"]
                == ErrorCode.NONE
            )
            await second.aclose()
