"""Kafka's message specs (parsed JSON) to :mod:`wire.schema` declarations.

The translation is mechanical and loses nothing the codecs need: field names become
snake_case, ``[]SomeStruct`` becomes ``"[]"`` with the struct's fields (inline or from the
spec's ``commonStructs``), a single struct becomes ``"{}"``, and Kafka's string defaults
(``"-1"``, ``"0x7fffffff"``, ``"null"``, ``"true"``) become Python values.  What the codecs
do not need (``about``, ``entityType``, ``mapKey``, ``ignorable``, ``zeroCopy``) is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from wire.api_keys import ApiKey
from wire.schema import MISSING, PRIMITIVE_TYPES, Api, F, Field, RecordSchema, Versions, api, record

Spec = Mapping[str, Any]

_WORD_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_INTEGER_TYPES = frozenset({"int8", "int16", "int32", "int64", "uint16"})
_RECORD_PARTS: dict[str, Literal["key", "value"]] = {"coordinator-key": "key", "coordinator-value": "value"}


class SpecError(ValueError):
    """A spec uses something the declaration language cannot say."""


def snake_case(name: str) -> str:
    """Kafka's field name in the form the declarations use: ``PartitionIndex`` -> ``partition_index``."""
    return _WORD_BREAK.sub("_", name).lower()


def stable_versions(request: Spec) -> Versions:
    """The versions a broker serves: ``validVersions`` without an unstable latest version."""
    valid = Versions.parse(request["validVersions"])
    if request.get("latestVersionUnstable") and valid.high is not None and valid.high > valid.low:
        return Versions(valid.low, valid.high - 1)
    return valid


def translate_api(request: Spec, response: Spec, versions: Versions) -> Api:
    """The declaration of one API from its request and response specs."""
    key = ApiKey(request["apiKey"])
    if response.get("apiKey") != request["apiKey"]:
        raise SpecError(f"{request['name']} and {response['name']} have different API keys")
    if Versions.parse(request["flexibleVersions"]) != Versions.parse(response["flexibleVersions"]):
        raise SpecError(f"{key.api_name}: request and response differ in flexible versions")
    return api(
        key,
        versions.text(),
        flexible=request["flexibleVersions"],
        request=translate_fields(request["fields"], _common_structs(request)),
        response=translate_fields(response["fields"], _common_structs(response)),
    )


def translate_record(spec: Spec) -> RecordSchema:
    """The declaration of an internal topic's key or value (a ``coordinator-key``/``-value`` spec)."""
    part = _RECORD_PARTS.get(spec["type"])
    if part is None:
        raise SpecError(f"{spec['name']} is a {spec['type']}, not a coordinator record")
    return record(
        spec["name"],
        spec["apiKey"],
        part,
        spec["validVersions"],
        flexible=spec["flexibleVersions"],
        fields=translate_fields(spec["fields"], _common_structs(spec)),
    )


def translate_fields(fields: list[Spec], common: Mapping[str, list[Spec]]) -> tuple[Field, ...]:
    """The declarations of a struct's fields, in the spec's order."""
    return tuple(_translate_field(field, common) for field in fields)


def _common_structs(spec: Spec) -> dict[str, list[Spec]]:
    return {struct["name"]: struct["fields"] for struct in spec.get("commonStructs", ())}


def _translate_field(spec: Spec, common: Mapping[str, list[Spec]]) -> Field:
    name = snake_case(spec["name"])
    if spec.get("flexibleVersions") is not None:
        raise SpecError(f"{name}: field-level flexibleVersions is only used by request headers")
    kind, struct_name = _field_type(spec["type"])
    nested: tuple[Field, ...] = ()
    if struct_name is not None:
        fields = spec.get("fields") or common.get(struct_name)
        if not fields:
            raise SpecError(f"{name}: struct type {struct_name} has no fields")
        nested = translate_fields(fields, common)
    # A tagged field may give only its taggedVersions, which are then its versions.
    versions = spec.get("versions", spec.get("taggedVersions"))
    tag = spec.get("tag")
    if tag is not None and Versions.parse(spec.get("taggedVersions", versions)) != Versions.parse(versions):
        raise SpecError(f"{name}: tagged in only some of its versions")
    return F(
        name,
        kind,
        versions,
        *nested,
        nullable=spec.get("nullableVersions", "none"),
        tag=tag,
        default=_default(spec, kind),
    )


def _field_type(kafka_type: str) -> tuple[str, str | None]:
    """Our type name and, for a struct or array of structs, the spec's struct name."""
    if kafka_type in PRIMITIVE_TYPES:
        return kafka_type, None
    if kafka_type.startswith("[]"):
        element = kafka_type[2:]
        if element in PRIMITIVE_TYPES:
            return kafka_type, None
        return "[]", element
    return "{}", kafka_type


def _default(spec: Spec, kind: str) -> Any:
    """The field's ``default`` as a Python value; MISSING where Kafka uses the type's zero."""
    raw = spec.get("default")
    if raw is None:
        return MISSING
    if raw == "null":
        if not spec.get("nullableVersions"):
            raise SpecError(f"{spec['name']}: null default on a field that is never nullable")
        return None
    if kind in _INTEGER_TYPES:
        value = raw if isinstance(raw, int) else int(raw, 0)
        return MISSING if value == 0 else value
    if kind == "bool":
        value = raw if isinstance(raw, bool) else {"true": True, "false": False}[raw]
        return True if value else MISSING
    if kind == "float64":
        number = float(raw)
        return MISSING if number == 0 else number
    if kind == "string":
        return MISSING if raw == "" else raw
    raise SpecError(f"{spec['name']}: default {raw!r} for type {kind} is not supported")
