"""Topic regular expressions of consumer-group subscriptions (KIP-848), matched with RE2.

Kafka compiles ``SubscribedTopicRegex`` with RE2J, whose matching takes time linear in the
topic name.  Python's ``re`` backtracks: ``(a|aa)+`` against a topic named sixty ``a``s and a
dash takes hours, and the coordinator runs on the broker's only event loop, so one
heartbeat could freeze the broker for every client.  ``google-re2`` is RE2 itself, which
also gives RE2J's syntax (no backreferences or lookaround: a pattern Kafka refuses is
refused here too) and a bound on the memory one pattern may compile to.

Compiled patterns are cached: the coordinator matches the same few patterns against every
topic whenever a group's subscription is recomputed.
"""

from __future__ import annotations

import functools

import re2

_OPTIONS = re2.Options()
# An invalid pattern is the client's problem and gets INVALID_REGULAR_EXPRESSION; RE2 would
# also print it to stderr, which a client could use to flood the broker's log.
_OPTIONS.log_errors = False
_CACHED_PATTERNS = 256


class InvalidTopicRegex(ValueError):
    """The pattern does not compile under RE2 syntax (or compiles past its memory bound)."""


@functools.lru_cache(maxsize=_CACHED_PATTERNS)
def compile_topic_regex(pattern: str) -> re2._Regexp:
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as error:
        message = error.args[0] if error.args else error
        if isinstance(message, bytes):
            message = message.decode(errors="replace")
        raise InvalidTopicRegex(str(message)) from None


def matches(pattern: str, topic: str) -> bool:
    """Whether the whole topic name matches (Kafka: ``Pattern.matcher(topic).matches()``)."""
    return compile_topic_regex(pattern).fullmatch(topic) is not None
