"""Generate a straight-line encoder and decoder per (API, version, direction) from its schema.

Interpreting the schema at run time would cost a dictionary walk and several branches per
field per message; instead this module writes Python source specialised to one version of
one message, compiles it once, and the hot path runs only that code.  Runs of consecutive
fixed-width fields are read and written with one merged precompiled ``struct.Struct`` each,
arrays of fixed-width values with one ``struct`` call, arrays of structs with a loop whose
body is inlined (no call per element), and variable-length items through the small helpers
of :mod:`wire.primitives`.

Generated decoders take ``(buf: memoryview, pos: int)`` and return ``(message, end_pos)``;
request decoders also take ``elements``, the most array elements the whole request may hold
(see :data:`MAX_REQUEST_ELEMENTS`).
A decoded message holds every field the API declares: fields absent from the decoded
version (and tagged fields not sent) get their defaults.  Decoders raise ``DecodeError``
themselves for nulls in non-nullable fields and bad lengths; ``struct.error`` and
``IndexError`` from reading past the end are left to :mod:`wire.codec`, which converts them,
so the generated code carries no per-field bounds checks for fixed-width fields.

Generated encoders take the message dict and read each field with ``.get(name, default)``.
Tagged fields are written only when their value differs from the default, in tag order.
Encoders refuse a dict holding a key that no version of its struct declares (``EncodeError``):
a misspelt ``'eror_code'`` would otherwise be sent as ``error_code`` 0, an error turned into a
success.  The check is a set comparison per struct, 0.1-0.5 us (``python -m
bench.strict_encoding`` and bench/README.md: no measurable cost per GB produced or consumed),
so it runs in production too; ``strict=False`` leaves it out, for that benchmark only.
Unknown tagged fields seen on decode are skipped, not preserved.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from wire import primitives
from wire.errors import DecodeError, EncodeError
from wire.schema import MISSING, Api, Field

Direction = Literal["request", "response"]
Message = dict[str, Any]
Outgoing = Mapping[str, Any]
"""A message to encode: a dict, or a ``TypedDict`` of :mod:`wire.messages` (a Mapping to mypy)."""
Encoder = Callable[[Outgoing], bytes]
Decoder = Callable[[memoryview, int], tuple[Message, int]]

_HELPERS = (
    "read_uvarint",
    "read_tag_count",
    "skip_tagged_fields",
    "read_array_length",
    "read_compact_array_length",
    "read_string",
    "read_compact_string",
    "read_bytes",
    "read_compact_bytes",
    "read_records",
    "read_compact_records",
    "unpack_fixed_array",
    "encode_uvarint",
    "encode_string",
    "encode_compact_string",
    "bytes_length",
    "compact_bytes_length",
    "array_length",
    "compact_array_length",
    "pack_fixed_array",
    "check_uuid",
    "INT8",
)

# Helper names per (type, flexible): how a variable-length value is read and its prefix written.
_READERS = {
    ("string", False): "read_string",
    ("string", True): "read_compact_string",
    ("bytes", False): "read_bytes",
    ("bytes", True): "read_compact_bytes",
    ("records", False): "read_records",
    ("records", True): "read_compact_records",
}
_STRING_WRITERS = {False: "encode_string", True: "encode_compact_string"}
_BYTES_PREFIXES = {False: "bytes_length", True: "compact_bytes_length"}
_ARRAY_READERS = {False: "read_array_length", True: "read_compact_array_length"}
_ARRAY_PREFIXES = {False: "array_length", True: "compact_array_length"}
# Array counts are bounded by the bytes left, so decoding work is linear in the input, but
# the constant is large: an element of a few bytes decodes to a dict of a few hundred, so a
# 100 MB request (socket.request.max.bytes) of minimal elements would take over 4 GB and a
# minute of the event loop.  Requests therefore hold at most this many array elements in
# all (Odradek-specific; Kafka has no such bound).  The largest legitimate requests name
# every partition on the broker once (Fetch, ListOffsets, OffsetCommit/Fetch across
# max.partitions.per.broker = 100,000 partitions, plus one element per topic); this is five
# times that, and caps one request at about 125 MB and two seconds of decoding.
MAX_REQUEST_ELEMENTS = 500_000
_NULL_STRUCT = b"\xff"
_PRESENT_STRUCT = b"\x01"


@dataclass(frozen=True)
class Codec:
    """The generated functions for one (API, version, direction), plus their source."""

    label: str
    encode: Encoder
    decode: Decoder
    source: str
    encode_parts: Callable[[Outgoing], list[Any]]


def generate(api: Api, version: int, direction: Direction, strict: bool = True) -> Codec:
    """Write, compile and return the encoder and decoder of one message version."""
    if version not in api.versions:
        raise ValueError(f"{api.name} has no version {version}")
    fields = api.request if direction == "request" else api.response
    label = f"{api.name} v{version} {direction}"
    return generate_struct(label, fields, version, version in api.flexible, direction == "request", strict)


def generate_struct(
    label: str,
    fields: tuple[Field, ...],
    version: int,
    flexible: bool,
    counts_elements: bool = False,
    strict: bool = True,
) -> Codec:
    """The codec of any versioned struct: a message body, or a record of an internal topic.

    ``counts_elements`` bounds the arrays' elements in all (see :data:`MAX_REQUEST_ELEMENTS`),
    for input that comes from clients; ``strict=False`` drops the encoder's refusal of undeclared
    keys (see the module docstring).
    """
    gen = _Generator(label, version, flexible, counts_elements, strict)
    source = gen.module(fields)
    namespace = gen.namespace
    exec(compile(source, f"<wire {label}>", "exec"), namespace)
    return Codec(label, namespace["encode"], namespace["decode"], source, namespace["encode_parts"])


def _literal(value: Any) -> str:
    """Python source for a default value; builds a fresh object each time it runs."""
    if value is None or isinstance(value, bool | int | str | bytes):
        return repr(value)
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_literal(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {_literal(item)}" for key, item in value.items()) + "}"
    raise ValueError(f"unsupported default value {value!r}")


def _default(field: Field) -> Any:
    """A field's default; a struct's default holds the defaults of all its fields."""
    if field.is_struct and field.default is MISSING:
        return {sub.name: _default(sub) for sub in field.fields}
    return field.default_value()


_NOT_NULLABLE = {"DecodeError": "is null but not nullable", "EncodeError": "is not nullable"}
"""How a failure says that a null was read or given for a field that may not be null."""


class _Generator:
    """Accumulates the source and namespace of one generated module."""

    def __init__(self, label: str, version: int, flexible: bool, counts_elements: bool, strict: bool) -> None:
        self.version = version
        self.flexible = flexible
        self.counts_elements = counts_elements
        self.label = label
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {name: getattr(primitives, name) for name in _HELPERS}
        self.namespace.update(DecodeError=DecodeError, EncodeError=EncodeError)
        self._counter = itertools.count()
        self._structs: dict[str, str] = {}
        self.strict = strict

    # --- bookkeeping -----------------------------------------------------------------

    def module(self, fields: tuple[Field, ...]) -> str:
        if self.counts_elements:
            self.emit(0, f"def decode(buf, pos, elements={MAX_REQUEST_ELEMENTS}):")
        else:
            self.emit(0, "def decode(buf, pos):")
        self.emit(1, "end = len(buf)")
        self.decode_struct(fields, "message", 1, "")
        self.emit(1, "return message, pos")
        self.emit(0, "def encode(message):")
        self.emit(1, "return b''.join(encode_parts(message))")
        self.emit(0, "def encode_parts(message):")
        self.emit(1, "parts = []")
        self.emit(1, "w = parts.append")
        self.encode_struct(fields, "message", "w", 1, "")
        self.emit(1, "return parts")
        return "\n".join(self.lines) + "\n"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def name(self, prefix: str) -> str:
        return f"{prefix}{next(self._counter)}"

    def const(self, value: Any) -> str:
        name = self.name("K")
        self.namespace[name] = value
        return name

    def struct(self, fmt: str) -> str:
        if fmt not in self._structs:
            self._structs[fmt] = self.const(struct.Struct(fmt))
        return self._structs[fmt]

    def fail(self, indent: int, error: str, message: str) -> None:
        self.emit(indent, f"raise {error}({f'{self.label}: {message}'!r})")

    def null_branch(self, field: Field, indent: int, value: str, if_null: str, error: str, path: str) -> int:
        """Emit ``if <value> is None:`` running ``if_null`` where ``field`` is nullable in this
        version and raising ``error`` otherwise, then ``else:``; returns the else body's indent."""
        self.emit(indent, f"if {value} is None:")
        if self.nullable(field):
            self.emit(indent + 1, if_null)
        else:
            self.fail(indent + 1, error, f"{path} {_NOT_NULLABLE[error]}")
        self.emit(indent, "else:")
        return indent + 1

    # --- schema queries ------------------------------------------------------------------

    def split(self, fields: tuple[Field, ...]) -> tuple[list[Field], list[Field]]:
        """Fields of this version, split into regular (in order) and tagged (by tag)."""
        present = [f for f in fields if self.version in f.versions]
        tagged = sorted((f for f in present if f.tag is not None), key=_tag)
        if tagged and not self.flexible:
            raise ValueError(f"{self.label}: tagged field {tagged[0].name} in a non-flexible version")
        return [f for f in present if f.tag is None], tagged

    def nullable(self, field: Field) -> bool:
        return self.version in field.nullable

    def min_size(self, type_name: str, fields: tuple[Field, ...] = (), nullable: bool = False) -> int:
        """Fewest bytes a value can encode to; bounds array counts read from the input."""
        if type_name in primitives.FIXED_TYPES:
            return primitives.FIXED_TYPES[type_name][1]
        if type_name == "{}":
            return 1 if nullable else self.struct_min_size(fields)
        if self.flexible:
            return 1
        return 2 if type_name == "string" else 4

    def struct_min_size(self, fields: tuple[Field, ...]) -> int:
        regular, _ = self.split(fields)
        size = sum(self.min_size(f.type, f.fields, self.nullable(f)) for f in regular)
        return size + (1 if self.flexible else 0)

    # --- decoding ------------------------------------------------------------------------

    def decode_struct(self, fields: tuple[Field, ...], target: str, indent: int, path: str) -> None:
        """Emit code that reads one struct at ``pos`` into the dict variable ``target``."""
        regular, tagged = self.split(fields)
        values: dict[str, str] = {}
        groups = [(fixed, list(run)) for fixed, run in itertools.groupby(regular, key=_is_fixed)]
        tagged_done = False
        for index, (fixed, run) in enumerate(groups):
            names = [self.name("v") for _ in run]
            values.update(zip((f.name for f in run), names, strict=True))
            if not fixed:
                for f, name in zip(run, names, strict=True):
                    self.decode_value(f, name, indent, f"{path}{f.name}")
                continue
            fmt = ">" + _fixed_format(run)
            if self.flexible and not tagged and index == len(groups) - 1:
                # Fold the tagged-field count into the run: usually 0, so no helper call.
                count = self.name("n")
                with_count = self.struct(fmt + "B")
                self.emit(indent, f"{', '.join(names)}, {count} = {with_count}.unpack_from(buf, pos)")
                self.emit(indent, f"pos += {struct.calcsize(fmt) + 1}")
                self.emit(indent, f"if {count}:")
                self.emit(indent + 1, "pos = skip_tagged_fields(buf, pos - 1)")
                tagged_done = True
            else:
                self.emit(indent, f"{', '.join(names)}, = {self.struct(fmt)}.unpack_from(buf, pos)")
                self.emit(indent, f"pos += {struct.calcsize(fmt)}")
        if self.flexible and not tagged_done:
            self.decode_tagged(tagged, values, indent, path)
        items = ", ".join(f"{f.name!r}: {values.get(f.name) or _literal(_default(f))}" for f in fields)
        self.emit(indent, f"{target} = {{{items}}}")

    def decode_tagged(self, tagged: list[Field], values: dict[str, str], indent: int, path: str) -> None:
        # Most sections are empty (a single 0 byte): test for that before calling helpers.
        if not tagged:
            self.emit(indent, "pos = skip_tagged_fields(buf, pos) if buf[pos] else pos + 1")
            return
        count, tag, field_end = self.name("n"), self.name("tag"), self.name("tend")
        for f in tagged:
            values[f.name] = self.name("v")
            self.emit(indent, f"{values[f.name]} = {_literal(_default(f))}")
        self.emit(indent, "if not buf[pos]:")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent, "else:")
        indent += 1
        self.emit(indent, f"{count}, pos = read_tag_count(buf, pos)")
        self.emit(indent, f"for _ in range({count}):")
        self.emit(indent + 1, f"{tag}, pos = read_uvarint(buf, pos)")
        self.emit(indent + 1, f"{field_end}, pos = read_uvarint(buf, pos)")
        self.emit(indent + 1, f"{field_end} += pos")
        self.emit(indent + 1, f"if {field_end} > end:")
        self.fail(indent + 2, "DecodeError", f"{path}tagged field runs past the end")
        for index, f in enumerate(tagged):
            self.emit(indent + 1, f"{'el' if index else ''}if {tag} == {f.tag}:")
            self.decode_value(f, values[f.name], indent + 2, f"{path}{f.name}")
            self.emit(indent + 2, f"if pos > {field_end}:")
            self.fail(indent + 3, "DecodeError", f"{path}{f.name} overruns its tagged field size")
        self.emit(indent + 1, f"pos = {field_end}")

    def decode_value(self, field: Field, target: str, indent: int, path: str) -> None:
        """Emit code that reads one field's value into ``target``."""
        kind = field.type
        if kind in primitives.FIXED_TYPES:  # only tagged fixed-width fields get here
            self.emit(
                indent, f"{target}, = {self.struct('>' + _fixed_format([field]))}.unpack_from(buf, pos)"
            )
            self.emit(indent, f"pos += {primitives.FIXED_TYPES[kind][1]}")
        elif kind in ("string", "bytes", "records"):
            null_error = None if self.nullable(field) else f"{path} is null but not nullable"
            self.decode_variable(kind, target, indent, null_error)
        elif kind == "{}":
            if self.nullable(field):
                marker = self.name("m")
                self.emit(indent, f"{marker}, = INT8.unpack_from(buf, pos)")
                self.emit(indent, "pos += 1")
                self.emit(indent, f"if {marker} < 0:")
                self.emit(indent + 1, f"{target} = None")
                self.emit(indent, "else:")
                indent += 1
            self.decode_struct(field.fields, target, indent, f"{path}.")
        else:
            self.decode_array(field, target, indent, path)

    def decode_array(self, field: Field, target: str, indent: int, path: str) -> None:
        element = field.element_type
        # An element that can encode to zero bytes counts as one, so no count read from the
        # input can exceed the bytes left: decoding work is bounded by the input's size.
        min_size = self.min_size(element) if element else max(1, self.struct_min_size(field.fields))
        count = self.name("n")
        self.emit(indent, f"{count}, pos = {_ARRAY_READERS[self.flexible]}(buf, pos, {min_size})")
        indent = self.null_branch(field, indent, count, f"{target} = None", "DecodeError", path)
        if self.counts_elements:
            self.emit(indent, f"elements -= {count}")
            self.emit(indent, "if elements < 0:")
            self.fail(indent + 1, "DecodeError", "more array elements than a request may hold")
        if element in primitives.FIXED_TYPES:
            self.emit(indent, f"{target}, pos = unpack_fixed_array(buf, pos, {count}, {element!r})")
            return
        self.emit(indent, f"{target} = []")
        item = self.name("e")
        self.emit(indent, f"for _ in range({count}):")
        if element is None:
            self.decode_struct(field.fields, item, indent + 1, f"{path}[].")
        else:
            self.decode_variable(element, item, indent + 1, f"{path}[] holds a null")
        self.emit(indent + 1, f"{target}.append({item})")

    def decode_variable(self, kind: str, target: str, indent: int, null_error: str | None) -> None:
        """Emit code that reads a string, bytes or records value; ``null_error`` rejects a null."""
        self.emit(indent, f"{target}, pos = {_READERS[kind, self.flexible]}(buf, pos)")
        if null_error is not None:
            self.emit(indent, f"if {target} is None:")
            self.fail(indent + 1, "DecodeError", null_error)

    # --- encoding ------------------------------------------------------------------------

    def encode_struct(self, fields: tuple[Field, ...], source: str, w: str, indent: int, path: str) -> None:
        """Emit code that writes the struct held in dict variable ``source`` through ``w``."""
        if self.strict:
            known = self.const(frozenset(f.name for f in fields))
            self.emit(indent, f"if not {source}.keys() <= {known}:")
            self.emit(
                indent + 1,
                f"raise EncodeError({(path or 'message') + ' has undeclared fields '!r}"
                f" + repr(sorted({source}.keys() - {known})))",
            )
        regular, tagged = self.split(fields)
        groups = [(fixed, list(run)) for fixed, run in itertools.groupby(regular, key=_is_fixed)]
        tagged_done = False
        for index, (fixed, run) in enumerate(groups):
            if not fixed:
                for f in run:
                    value = self.name("x")
                    self.emit(indent, f"{value} = {source}.get({f.name!r}, {self.default_expr(f)})")
                    self.encode_value(f, value, w, indent, f"{path}{f.name}")
                continue
            fmt = ">" + _fixed_format(run)
            if self.flexible and not tagged and index == len(groups) - 1:
                fmt += "x"  # the empty tagged-field section, written as a pad byte
                tagged_done = True
            args = ", ".join(
                self.fixed_arg(f, f"{source}.get({f.name!r}, {self.default_expr(f)})") for f in run
            )
            self.emit(indent, f"{w}({self.struct(fmt)}.pack({args}))")
        if self.flexible and not tagged_done:
            self.encode_tagged(tagged, source, w, indent, path)

    def encode_tagged(self, tagged: list[Field], source: str, w: str, indent: int, path: str) -> None:
        if not tagged:
            self.emit(indent, f"{w}({primitives.EMPTY_TAGGED_FIELDS!r})")
            return
        found = self.name("tags")
        self.emit(indent, f"{found} = []")
        for f in tagged:
            value, parts, sub = self.name("x"), self.name("parts"), self.name("w")
            default = self.const(_default(f))
            self.emit(indent, f"{value} = {source}.get({f.name!r}, {default})")
            # Identity first: an absent field is the default object itself, cheap to skip.
            skip = f"{value} and " if f.is_struct and f.default is MISSING else ""
            self.emit(indent, f"if {value} is not {default} and {skip}{value} != {default}:")
            self.emit(indent + 1, f"{parts} = []")
            self.emit(indent + 1, f"{sub} = {parts}.append")
            self.encode_value(f, value, sub, indent + 1, f"{path}{f.name}")
            tag_bytes = primitives.encode_uvarint(_tag(f))
            self.emit(indent + 1, f"{found}.append(({tag_bytes!r}, b''.join({parts})))")
        tag, data = self.name("t"), self.name("d")
        self.emit(indent, f"{w}(encode_uvarint(len({found})))")
        self.emit(indent, f"for {tag}, {data} in {found}:")
        self.emit(indent + 1, f"{w}({tag})")
        self.emit(indent + 1, f"{w}(encode_uvarint(len({data})))")
        self.emit(indent + 1, f"{w}({data})")

    def default_expr(self, field: Field) -> str:
        """Source for a field's default in ``.get``: a literal, or a shared read-only constant."""
        value = _default(field)
        if value is None or isinstance(value, bool | int | str | bytes):
            return repr(value)
        return self.const(value)

    def fixed_arg(self, field: Field, expr: str) -> str:
        return f"check_uuid({expr})" if field.type == "uuid" else expr

    def encode_value(self, field: Field, value: str, w: str, indent: int, path: str) -> None:
        """Emit code that writes the value held in variable ``value``."""
        kind = field.type
        if kind in primitives.FIXED_TYPES:  # only tagged fixed-width fields get here
            fmt = ">" + _fixed_format([field])
            self.emit(indent, f"{w}({self.struct(fmt)}.pack({self.fixed_arg(field, value)}))")
            return
        indent = self.null_branch(
            field, indent, value, f"{w}({self.null_bytes(kind)!r})", "EncodeError", path
        )
        if kind in ("string", "bytes", "records"):
            self.encode_variable(kind, value, w, indent)
        elif kind == "{}":
            if self.nullable(field):
                self.emit(indent, f"{w}({_PRESENT_STRUCT!r})")
            self.encode_struct(field.fields, value, w, indent, f"{path}.")
        else:
            self.encode_array(field, value, w, indent, path)

    def encode_array(self, field: Field, value: str, w: str, indent: int, path: str) -> None:
        element = field.element_type
        self.emit(indent, f"{w}({_ARRAY_PREFIXES[self.flexible]}({value}))")
        if element in primitives.FIXED_TYPES:
            self.emit(indent, f"{w}(pack_fixed_array({value}, {element!r}))")
            return
        item = self.name("e")
        self.emit(indent, f"for {item} in {value}:")
        if element is None:
            self.encode_struct(field.fields, item, w, indent + 1, f"{path}[].")
            return
        self.emit(indent + 1, f"if {item} is None:")
        self.fail(indent + 2, "EncodeError", f"{path}[] holds a null")
        self.encode_variable(element, item, w, indent + 1)

    def encode_variable(self, kind: str, value: str, w: str, indent: int) -> None:
        """Emit code that writes a non-null string, bytes or records value after its length."""
        if kind == "string":
            self.emit(indent, f"{w}({_STRING_WRITERS[self.flexible]}({value}))")
        else:
            self.emit(indent, f"{w}({_BYTES_PREFIXES[self.flexible]}({value}))")
            self.emit(indent, f"{w}({value})")

    def null_bytes(self, kind: str) -> bytes:
        if kind == "{}":
            return _NULL_STRUCT
        if self.flexible:
            return primitives.COMPACT_NULL
        return primitives.NULL_STRING if kind == "string" else primitives.NULL_INT32_LENGTH


def _tag(field: Field) -> int:
    """The tag of a field known to be tagged."""
    if field.tag is None:
        raise ValueError(f"{field.name} is not a tagged field")
    return field.tag


def _is_fixed(field: Field) -> bool:
    return field.type in primitives.FIXED_TYPES


def _fixed_format(run: list[Field]) -> str:
    return "".join(primitives.FIXED_TYPES[f.type][0] for f in run)
