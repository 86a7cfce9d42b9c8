"""Kafka message schemas declared as data.

Every API is one :class:`Api` value listing its request and response fields, each with
the versions it exists in, the versions in which it may be null, and (for flexible
versions) its tag.  Codecs are generated from these declarations once at import time
(see :mod:`wire.codegen`), so supporting a new version of an API is usually a one-line
change to its declaration rather than new encoding code.

Naming: a field's name is the snake_case form of the name Apache Kafka's message JSON
gives it (``TopicData`` -> ``topic_data``, ``PartitionIndex`` -> ``partition_index``),
so handlers can rely on a predictable dict key for every field.

Field types:
  ``bool``, ``int8``, ``int16``, ``int32``, ``int64``, ``uint16``, ``float64``,
  ``string``, ``bytes``, ``records`` (a record set, kept as raw bytes), ``uuid``
  (16 raw bytes), ``[]T`` for an array of a primitive ``T``, ``[]`` for an array of
  structs whose fields follow, and ``{}`` for a single nested struct.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from wire.api_keys import ApiKey

PRIMITIVE_TYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint16", "float64", "string", "bytes", "records", "uuid"}
)


class _Missing:
    """Marker for "no explicit default": the type's zero value is used."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

ZERO_UUID = bytes(16)


@dataclass(frozen=True)
class Versions:
    """An inclusive range of versions; ``high`` of None means open-ended ("3+")."""

    low: int
    high: int | None

    @classmethod
    def parse(cls, text: str) -> Versions:
        """Parse Kafka's version notation: ``"none"``, ``"3"``, ``"3+"`` or ``"3-7"``."""
        text = text.strip()
        if text == "none":
            return cls(1, 0)  # empty range
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            low, high = text.split("-", 1)
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def text(self) -> str:
        """Kafka's notation for this range, as :meth:`parse` reads it."""
        if self.high is None:
            return f"{self.low}+"
        if self.high < self.low:
            return "none"
        return str(self.low) if self.high == self.low else f"{self.low}-{self.high}"

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int):
            return False
        return version >= self.low and (self.high is None or version <= self.high)

    def __iter__(self):
        """Iterate a closed range (an open range cannot be iterated)."""
        if self.high is None:
            raise ValueError("cannot iterate an open version range")
        return iter(range(self.low, self.high + 1))


@dataclass(frozen=True)
class Field:
    """One field of a request or response struct."""

    name: str
    type: str
    versions: Versions
    nullable: Versions
    tag: int | None
    default: Any
    fields: tuple[Field, ...]

    @property
    def is_struct_array(self) -> bool:
        return self.type == "[]"

    @property
    def is_struct(self) -> bool:
        return self.type == "{}"

    @property
    def element_type(self) -> str | None:
        """For ``[]T`` arrays of primitives, ``T``; otherwise None."""
        if self.type.startswith("[]") and len(self.type) > 2:
            return self.type[2:]
        return None

    def default_value(self) -> Any:
        """The value encoded when a dict does not carry this field."""
        if self.default is not MISSING:
            return self.default
        return type_default(self.type)


def type_default(type_name: str) -> Any:
    """Zero value of a field type, as Kafka's generated code uses it."""
    if type_name in ("int8", "int16", "int32", "int64", "uint16"):
        return 0
    if type_name == "float64":
        return 0.0
    if type_name == "bool":
        return False
    if type_name == "string":
        return ""
    if type_name == "bytes":
        return b""
    if type_name == "records":
        return None
    if type_name == "uuid":
        return ZERO_UUID
    if type_name.startswith("[]"):
        return []
    if type_name == "{}":
        return {}
    raise ValueError(f"unknown field type {type_name!r}")


def F(
    name: str,
    type: str,
    versions: str = "0+",
    *fields: Field,
    nullable: str = "none",
    tag: int | None = None,
    default: Any = MISSING,
) -> Field:
    """Declare a field.  Nested struct fields follow the version string positionally.

    ``F("topics", "[]", "0+", F("name", "string"), F("partitions", "[]int32"))``
    """
    primitive_array = type.startswith("[]") and type[2:] in PRIMITIVE_TYPES
    if type not in PRIMITIVE_TYPES and type not in ("[]", "{}") and not primitive_array:
        raise ValueError(f"field {name}: unknown type {type!r}")
    if type in ("[]", "{}") and not fields:
        raise ValueError(f"field {name}: struct types need nested fields")
    return Field(
        name=name,
        type=type,
        versions=Versions.parse(versions),
        nullable=Versions.parse(nullable),
        tag=tag,
        default=default,
        fields=tuple(fields),
    )


@dataclass(frozen=True)
class Api:
    """One Kafka API: its key, the versions we have schemas for, and its fields.

    ``flexible`` is the first version using compact types and tagged fields
    (Kafka's ``flexibleVersions``), or ``"none"``.  Which of the versions the broker serves
    is the handler's business (``broker.requests.api_support``), not the schema's.
    """

    key: ApiKey
    versions: Versions
    flexible: Versions
    request: tuple[Field, ...]
    response: tuple[Field, ...]

    @property
    def name(self) -> str:
        """Kafka's name of the API, e.g. ``OffsetForLeaderEpoch``."""
        return self.key.api_name


def api(
    key: ApiKey,
    versions: str,
    *,
    flexible: str,
    request: tuple[Field, ...] | list[Field],
    response: tuple[Field, ...] | list[Field],
) -> Api:
    """Declare an API (see :class:`Api`)."""
    return Api(
        key=key,
        versions=Versions.parse(versions),
        flexible=Versions.parse(flexible),
        request=tuple(request),
        response=tuple(response),
    )


@dataclass(frozen=True)
class RecordSchema:
    """A versioned key or value of the records in an internal topic (Kafka's coordinator
    records: ``OffsetCommitKey`` and ``OffsetCommitValue`` in ``__consumer_offsets``).

    A stored key starts with the int16 ``record_type`` (Kafka's ``apiKey`` of the record),
    then the key struct at version 0; a stored value starts with its int16 version.
    """

    name: str
    record_type: int
    part: Literal["key", "value"]
    versions: Versions
    flexible: Versions
    fields: tuple[Field, ...]


def record(
    name: str,
    record_type: int,
    part: Literal["key", "value"],
    versions: str = "0",
    *,
    flexible: str = "none",
    fields: tuple[Field, ...],
) -> RecordSchema:
    """Declare an internal topic's key or value (see :class:`RecordSchema`).

    The defaults are what Kafka's coordinator record keys declare (version 0 only, not
    flexible), so a key's declaration names only its type and fields."""
    return RecordSchema(
        name, record_type, part, Versions.parse(versions), Versions.parse(flexible), tuple(fields)
    )
