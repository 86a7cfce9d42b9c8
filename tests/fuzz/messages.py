"""Random but *valid* request bodies for any (API, version), built from the schema declarations.

The live fuzzer mutates valid requests rather than only sending noise: a request that decodes
reaches the handlers, and that is where state and resource bugs live.  Values come from small
pools of "interesting" numbers and a fixed set of names, for two reasons:

* Bounded state.  Topic names, group ids and member ids come from :data:`NAMES`, so the
  fuzzer can create at most a handful of topics and groups (plus what bit flips in those
  names yield; the harness deletes every topic it did not start with before comparing
  descriptors and memory with the baseline).  Random names would legitimately create
  thousands of topics and make that comparison meaningless.
* Bounded waits.  Fields that make the broker wait on purpose (``max_wait_ms``,
  ``timeout_ms``, ``rebalance_timeout_ms``) are drawn small, so an unmutated case is
  answered promptly; mutations may still turn them huge, which the harness allows for
  (see ``live_fuzzer.may_park``).

The neighbour's topic is never among the names, so no generated request may legitimately
delete, truncate or reconfigure it; bit flips cannot reach it either (its name shares no
prefix with these).

This uses :class:`random.Random` rather than hypothesis: one seeded generator per case makes
every case reproducible on its own (``--seed S --case N``) and costs microseconds, which a
million-frame run needs.
"""

from __future__ import annotations

import random
from typing import Any

from tests.fuzz.batches import random_record_set
from wire.schema import Field
from wire.schemas import ALL_APIS

# "a" * 60 + "-" is the topic a backtracking regex engine chokes on (see REGEXES).
NAMES = ("fuzz-a", "fuzz-b", "fuzz-c", "", "__consumer_offsets", "f" * 300, "fuzz group", "a" * 60 + "-")
# Consumer-group subscriptions: ordinary, invalid, outside RE2 syntax, and catastrophic for a
# backtracking engine (exponential and high-degree polynomial).
REGEXES = ("fuzz-.*", "(", r"(a)\1", "(a|aa)+", "(a+)+$", ".*" * 12 + "x", "a{1000}{1000}", "[" * 1000)
CONFIG_NAMES = ("retention.ms", "cleanup.policy", "max.message.bytes", "compression.type", "fuzz.unknown")
CONFIG_VALUES = ("0", "1", "-1", "compact", "delete", "zstd", "9223372036854775807", "x" * 40)
INTERESTING_INTS = (0, 1, -1, 2, 3, 7, 127, -128, 255, 2**15 - 1, -(2**15), 2**31 - 1, -(2**31))
_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}
# Fields whose value decides how long the broker may legitimately hold a request (or a group
# member it creates), and the range drawn for them (the harness's broker accepts sessions of
# 1-10 s, so members the fuzzer creates expire during the run).
_SHORT_WAITS = {
    "max_wait_ms": (0, 100),
    "timeout_ms": (0, 500),
    "rebalance_timeout_ms": (0, 2_000),
    "session_timeout_ms": (1_000, 10_000),
}
# Fields naming partitions, counts or sizes: mostly small, so requests hit real state.
_SMALL = frozenset(
    {"partition", "partition_index", "index", "count", "num_partitions", "replication_factor", "partitions"}
)
_MAX_ELEMENTS = 3
# String fields with a pool of their own, by field name.
_STRING_POOLS = {"value": CONFIG_VALUES, "subscribed_topic_regex": REGEXES}


class MessageGenerator:
    """Draws request bodies from one seeded :class:`random.Random`."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def request(self, api_key: int, version: int) -> dict[str, Any]:
        api = ALL_APIS[api_key]
        return self._struct(api.request, version)

    def _struct(self, fields: tuple[Field, ...], version: int) -> dict[str, Any]:
        # A struct with a "value" string is a config entry: its "name" is a config key.
        names = CONFIG_NAMES if any(f.name == "value" for f in fields) else NAMES
        return {f.name: self._field(f, version, names) for f in fields if version in f.versions}

    def _field(self, field: Field, version: int, names: tuple[str, ...]) -> Any:
        rng = self.rng
        if version in field.nullable and rng.random() < 0.1:
            return None
        if field.is_struct:
            return self._struct(field.fields, version)
        if field.is_struct_array:
            return [self._struct(field.fields, version) for _ in range(rng.randint(0, _MAX_ELEMENTS))]
        if field.element_type is not None:
            return [
                self._scalar(field.name, field.element_type, names)
                for _ in range(rng.randint(0, _MAX_ELEMENTS))
            ]
        return self._scalar(field.name, field.type, names)

    def _scalar(self, name: str, type_name: str, names: tuple[str, ...]) -> Any:
        rng = self.rng
        if type_name in _RANGES:
            return self._integer(name, *_RANGES[type_name])
        if type_name == "bool":
            return rng.random() < 0.5
        if type_name == "float64":
            return rng.choice((0.0, 1.5, -1.0, 1e300))
        if type_name == "string":
            return rng.choice(_STRING_POOLS.get(name, names))
        if type_name == "bytes":
            return rng.randbytes(rng.choice((0, 1, 8, 64)))
        if type_name == "records":
            return random_record_set(rng)
        if type_name == "uuid":
            return bytes(16) if rng.random() < 0.3 else rng.randbytes(16)
        raise ValueError(f"no generator for field type {type_name!r}")

    def _integer(self, name: str, low: int, high: int) -> int:
        rng = self.rng
        if name == "acks":
            return rng.choice((-1, 0, 1))
        if name in _SHORT_WAITS:
            return rng.randint(*_SHORT_WAITS[name])
        if name in _SMALL and rng.random() < 0.9:
            return rng.randint(0, 3)
        if rng.random() < 0.6:
            return max(low, min(high, rng.choice(INTERESTING_INTS)))
        return rng.randint(low, high)
