"""Fetch sessions (KIP-227) over a real socket: exact requests, exact answers.

Stock clients hide their session ids and epochs; these send them as a client does and check
each answer: a session opened by a full fetch, incremental answers that name only partitions
with news, the epoch and topic-id errors, forgotten partitions, closing, and the slots.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient, make_batch
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

NAMES_VERSION = 12
IDS_VERSION = 16


def fetch(
    client: RawClient,
    session_id: int,
    epoch: int,
    wanted: dict[Any, dict[int, int]],
    *,
    version: int = NAMES_VERSION,
    forgotten: dict[Any, list[int]] | None = None,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
) -> dict[str, Any]:
    """One Fetch: ``wanted`` maps a topic (name, or id from v13) to {partition: fetch offset}."""
    topic_key = "topic_id" if version >= 13 else "topic"
    return client.request(
        ApiKey.FETCH,
        version,
        {
            "max_wait_ms": max_wait_ms,
            "min_bytes": min_bytes,
            "max_bytes": 1 << 20,
            "session_id": session_id,
            "session_epoch": epoch,
            "topics": [
                {
                    topic_key: topic,
                    "partitions": [
                        {"partition": p, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                        for p, offset in offsets.items()
                    ],
                }
                for topic, offsets in wanted.items()
            ],
            "forgotten_topics_data": [
                {topic_key: topic, "partitions": indexes} for topic, indexes in (forgotten or {}).items()
            ],
        },
    )


def answered(response: dict[str, Any], version: int = NAMES_VERSION) -> dict[tuple[Any, int], int]:
    """{(topic, partition): record bytes} of every partition the answer names."""
    topic_key = "topic_id" if version >= 13 else "topic"
    return {
        (t[topic_key], p["partition_index"]): len(p["records"] or b"")
        for t in response["responses"]
        for p in t["partitions"]
    }


@pytest.fixture(scope="module")
def client(shared_broker: OdradekProcess) -> Iterator[RawClient]:
    with RawClient(shared_broker.bootstrap) as connection:
        yield connection


def test_a_session_answers_only_what_changed(client: RawClient, shared_broker: OdradekProcess) -> None:
    client.create_topic("sess-a", 3)
    client.produce("sess-a", 1, make_batch([b"x"]))
    opened = fetch(client, 0, 0, {"sess-a": {0: 0, 1: 0, 2: 0}})
    session_id = opened["session_id"]
    assert (opened["error_code"], session_id != 0) == (ErrorCode.NONE, True)
    assert set(answered(opened)) == {("sess-a", 0), ("sess-a", 1), ("sess-a", 2)}
    # Caught up on partition 1; nothing changed anywhere: an empty answer.
    quiet = fetch(client, session_id, 1, {"sess-a": {1: 1}})
    assert (quiet["error_code"], quiet["session_id"], answered(quiet)) == (ErrorCode.NONE, session_id, {})
    # New records on partition 2: only partition 2 is answered, with them, though not named.
    client.produce("sess-a", 2, make_batch([b"y", b"z"]))
    news = fetch(client, session_id, 2, {})
    (only,) = answered(news).items()
    assert only[0] == ("sess-a", 2) and only[1] > 0
    # A long poll of the session wakes on an append to any of its partitions.
    with RawClient(shared_broker.bootstrap) as producer:
        correlation = client.send_request(
            ApiKey.FETCH,
            NAMES_VERSION,
            {
                "max_wait_ms": 60_000,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "session_id": session_id,
                "session_epoch": 3,
                "topics": [
                    {
                        "topic": "sess-a",
                        "partitions": [{"partition": 2, "fetch_offset": 2, "partition_max_bytes": 1 << 20}],
                    }
                ],
                "forgotten_topics_data": [],
            },
        )
        producer.produce("sess-a", 0, make_batch([b"w"]))
        woken = client.receive_response(ApiKey.FETCH, NAMES_VERSION, correlation)
    assert list(answered(woken)) == [("sess-a", 0)]


def test_epoch_errors_and_closing(client: RawClient) -> None:
    client.create_topic("sess-b", 1)
    session_id = fetch(client, 0, 0, {"sess-b": {0: 0}})["session_id"]
    wrong = fetch(client, session_id, 5, {})
    assert (wrong["error_code"], wrong["session_id"], wrong["responses"]) == (
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        0,
        [],
    )
    assert fetch(client, session_id, 1, {})["error_code"] == ErrorCode.NONE  # the session survives
    closed = fetch(client, session_id, -1, {"sess-b": {0: 0}})
    assert (closed["error_code"], closed["session_id"], list(answered(closed))) == (
        ErrorCode.NONE,
        0,
        [("sess-b", 0)],
    )
    gone = fetch(client, session_id, 2, {})
    assert (gone["error_code"], gone["responses"]) == (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, [])


def test_forgotten_and_added_partitions(client: RawClient) -> None:
    client.create_topic("sess-c", 2)
    client.create_topic("sess-d", 1)
    session_id = fetch(client, 0, 0, {"sess-c": {0: 0, 1: 0}})["session_id"]
    # Adding a partition answers it (never told anything yet); forgetting one stops it.
    changed = fetch(client, session_id, 1, {"sess-d": {0: 0}}, forgotten={"sess-c": [1]})
    assert list(answered(changed)) == [("sess-d", 0)]
    client.produce("sess-c", 1, make_batch([b"unseen"]))
    client.produce("sess-c", 0, make_batch([b"seen"]))
    after = fetch(client, session_id, 2, {})
    assert list(answered(after)) == [("sess-c", 0)]
    # Forgetting every partition closes the session, answered sessionless.
    emptied = fetch(client, session_id, 3, {}, forgotten={"sess-c": [0], "sess-d": [0]})
    assert (emptied["error_code"], emptied["session_id"]) == (ErrorCode.NONE, 0)
    assert fetch(client, session_id, 4, {})["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_sessions_by_topic_id_keep_to_topic_ids(client: RawClient) -> None:
    client.create_topic("sess-e", 1)
    topic_id = client.metadata(["sess-e"])["topics"][0]["topic_id"]
    unknown_id = bytes(range(16))
    opened = fetch(client, 0, 0, {topic_id: {0: 0}, unknown_id: {0: 0}}, version=IDS_VERSION)
    session_id = opened["session_id"]
    errors = {t["topic_id"]: t["partitions"][0]["error_code"] for t in opened["responses"]}
    assert errors == {topic_id: ErrorCode.NONE, unknown_id: ErrorCode.UNKNOWN_TOPIC_ID}
    # The unknown id keeps being answered with its error; the quiet topic is left out.
    again = fetch(client, session_id, 1, {}, version=IDS_VERSION)
    assert list(answered(again, IDS_VERSION)) == [(unknown_id, 0)]
    by_name = fetch(client, session_id, 2, {})
    assert (by_name["error_code"], by_name["responses"]) == (ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, [])


def test_a_session_by_topic_id_does_not_follow_a_recreated_name(client: RawClient) -> None:
    client.create_topic("sess-g", 1)
    old_id = client.metadata(["sess-g"])["topics"][0]["topic_id"]
    session_id = fetch(client, 0, 0, {old_id: {0: 0}}, version=IDS_VERSION)["session_id"]
    assert client.delete_topic("sess-g")["error_code"] == ErrorCode.NONE
    client.create_topic("sess-g", 1)
    client.produce("sess-g", 0, make_batch([b"new topic"]))
    after = fetch(client, session_id, 1, {}, version=IDS_VERSION)
    (topic,) = after["responses"]
    assert (topic["topic_id"], topic["partitions"][0]["error_code"]) == (old_id, ErrorCode.UNKNOWN_TOPIC_ID)


def test_no_slots_no_sessions(tmp_path: Path) -> None:
    broker = OdradekProcess(tmp_path / "broker", {"max.incremental.fetch.session.cache.slots": "0"}).start()
    try:
        with RawClient(broker.bootstrap) as connection:
            connection.create_topic("sess-f", 1)
            connection.produce("sess-f", 0, make_batch([b"v"]))
            full = fetch(connection, 0, 0, {"sess-f": {0: 0}})
        assert (full["error_code"], full["session_id"]) == (ErrorCode.NONE, 0)
        assert answered(full)[("sess-f", 0)] > 0
    finally:
        broker.stop()
