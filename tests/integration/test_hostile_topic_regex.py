"""A consumer group's topic regex cannot freeze the broker (matching is RE2, as Kafka's RE2J).

With Python's backtracking ``re``, ``(a|aa)+`` matched against a topic named sixty ``a``s
and a dash took hours on the broker's only event loop: every client of the broker stalled.
"""

from __future__ import annotations

from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.raw_protocol import RawClient
from wire.error_codes import ErrorCode

BACKTRACKING_TOPIC = "a" * 60 + "-"


def test_a_catastrophic_regex_is_matched_in_linear_time(odradek_broker: OdradekProcess) -> None:
    # RawClient's socket timeout (15 s) fails the test if the broker stalls.
    with RawClient(odradek_broker.bootstrap) as client:
        client.create_topic(BACKTRACKING_TOPIC)
        client.create_topic("aaaa")
        response = client.join_consumer_group("g", regex="(a|aa)+")
        assert response["error_code"] == ErrorCode.NONE, response
        assigned = {t["topic_id"] for t in response["assignment"]["topic_partitions"]}
        (aaaa,) = client.metadata(["aaaa"])["topics"]
        assert assigned == {aaaa["topic_id"]}
        assert BACKTRACKING_TOPIC in {t["name"] for t in client.metadata()["topics"]}


def test_patterns_outside_re2_syntax_are_invalid(odradek_broker: OdradekProcess) -> None:
    """RE2 (like Kafka's RE2J) has no backreferences; an unbalanced group never compiles."""
    with RawClient(odradek_broker.bootstrap) as client:
        for regex in (r"(a)\1", "(a"):
            assert (
                client.join_consumer_group("g-" + regex, regex=regex)["error_code"]
                == ErrorCode.INVALID_REGULAR_EXPRESSION
            )
