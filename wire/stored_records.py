"""Codecs of the keys and values stored in internal topics, from their declarations.

Each is an int16 (a key's record type, a value's version) followed by a versioned struct,
encoded like a message body (:func:`wire.codegen.generate_struct`), so ``__consumer_offsets``
(and later ``__transaction_state``) records are read and written by the same generated code
as the protocol, from declarations generated from Kafka's own specs.
"""

from __future__ import annotations

import functools
import struct
from typing import Any

from wire.codec import DECODE_FAILURES, ENCODE_FAILURES
from wire.codegen import Codec, Message, Outgoing, generate_struct
from wire.errors import DecodeError, EncodeError
from wire.primitives import INT16
from wire.schema import RecordSchema

KEY_VERSION = 0
"""Kafka 4 writes every coordinator key at version 0; the int16 before it is the record type."""


@functools.cache
def _codec(schema: RecordSchema, version: int) -> Codec:
    return generate_struct(f"{schema.name} v{version}", schema.fields, version, version in schema.flexible)


def encode(schema: RecordSchema, version: int, message: Outgoing) -> bytes:
    """The stored bytes: the int16 prefix (record type or version), then the struct."""
    if version not in schema.versions:
        raise EncodeError(f"{schema.name} has no version {version}")
    prefix = schema.record_type if schema.part == "key" else version
    try:
        return INT16.pack(prefix) + _codec(schema, version).encode(message)
    except ENCODE_FAILURES as exc:
        raise EncodeError(f"{schema.name} v{version}: {exc}") from exc


def read_prefix(buf: Any) -> int:
    """The int16 a stored key or value starts with."""
    try:
        (prefix,) = INT16.unpack_from(buf, 0)
    except struct.error as exc:
        raise DecodeError(f"a stored record of {len(buf)} bytes has no int16 prefix") from exc
    return prefix


def decode(schema: RecordSchema, buf: Any) -> Message:
    """The struct after the int16 prefix; a value is read at the version its prefix names."""
    version = KEY_VERSION if schema.part == "key" else read_prefix(buf)
    if version not in schema.versions:
        raise DecodeError(f"unsupported {schema.name} version {version}")
    view = memoryview(buf)
    if view.format != "B":
        view = view.cast("B")
    try:
        message, _end = _codec(schema, version).decode(view, INT16.size)
    except DECODE_FAILURES as exc:
        raise DecodeError(f"{schema.name} v{version}: {exc}") from exc
    return message
