"""``wire/messages.py`` is what ``python -m wire.schemagen.typed`` renders from the committed
declarations, and its rules for ``Required`` fields hold on a small declaration."""

from __future__ import annotations

from pathlib import Path

import wire.messages
from wire.api_keys import ApiKey
from wire.schema import F, api
from wire.schemagen.typed import MESSAGES_PATH, render_messages
from wire.schemas import ALL_APIS


def test_committed_messages_are_what_the_declarations_render() -> None:
    rendered = render_messages(ALL_APIS.values())
    assert Path(wire.messages.__file__).resolve() == MESSAGES_PATH
    assert MESSAGES_PATH.read_text() == rendered, "regenerate with `python -m wire.schemagen.typed`"


def test_every_request_and_response_has_a_type() -> None:
    for declared in ALL_APIS.values():
        for suffix in ("Request", "Response"):
            assert isinstance(getattr(wire.messages, declared.name + suffix), type), declared.name


SAMPLE = api(
    ApiKey.HEARTBEAT,
    "0-4",
    flexible="4+",
    request=(F("group_id", "string"), F("member_id", "string", "1+", nullable="2+")),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "1+"),
        F(
            "topics",
            "[]",
            "2+",
            F("topic_error_code", "int16", default=3),
            F("name", "string"),
            F("leader_epoch", "int32", default=-1),
            F("added_in_3", "int64", "3+"),
        ),
        F("replicas", "[]int32"),
        F("cluster_id", "string", nullable="0+", default=None),
        F("blob", "bytes", tag=0, versions="4+"),
    ),
)


def _lines(source: str, cls: str) -> list[str]:
    body = source.split(f"class {cls}(TypedDict):\n", 1)[1]
    return body.split("\n\n", 1)[0].splitlines()


def test_required_fields_follow_the_rules() -> None:
    source = render_messages([SAMPLE])
    assert _lines(source, "HeartbeatResponse") == [
        "    throttle_time_ms: NotRequired[int]",  # set by the request layer
        "    error_code: NotRequired[int]",  # not in v0
        "    topics: NotRequired[list[HeartbeatResponseTopics]]",  # not in v0-1
        "    replicas: Required[Sequence[int]]",  # every version, no default
        "    cluster_id: NotRequired[str | None]",  # a default
        "    blob: NotRequired[Buffer]",  # tagged
    ]
    # Within a struct, "every version" means every version the struct exists in (2-4 here).
    assert _lines(source, "HeartbeatResponseTopics") == [
        "    topic_error_code: Required[int]",  # an error code, whatever its default
        "    name: Required[str]",
        "    leader_epoch: NotRequired[int]",
        "    added_in_3: NotRequired[int]",
    ]
    # A decoded request holds every field, with the decoder's types.
    assert _lines(source, "HeartbeatRequest") == [
        "    group_id: Required[str]",
        "    member_id: Required[str | None]",
    ]
