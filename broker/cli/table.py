"""What the command line prints: aligned tables for people, JSON for scripts.

Every listing command builds an :class:`Output` holding both forms, so ``--output json`` is
one switch in one place and the two can never disagree about what was found.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass


def cell_text(cell: object) -> str:
    """A flag shows as ``yes`` or nothing, so the columns that matter stand out."""
    if isinstance(cell, bool):
        return "yes" if cell else ""
    return str(cell)


def is_number(cell: object) -> bool:
    return isinstance(cell, int) and not isinstance(cell, bool)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell; numeric columns align right, as `kafka-*.sh` do not."""
    cells = [[cell_text(cell) for cell in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]
    numeric = [bool(rows) and all(is_number(row[i]) for row in rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    out = [line(list(headers)), line(["-" * w for w in widths])]
    out.extend(line(row) for row in cells)
    return "\n".join(out)


def json_key(header: str) -> str:
    """A table header as a JSON field name: ``PROTOCOL TYPE`` -> ``protocol_type``."""
    return header.lower().replace(" ", "_").replace("-", "_")


def table_records(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[dict[str, object]]:
    """The rows of a table as JSON objects keyed by its headers."""
    keys = [json_key(h) for h in headers]
    return [dict(zip(keys, row, strict=True)) for row in rows]


@dataclass(frozen=True)
class Output:
    """One command's result: ``text`` for a terminal, ``data`` (JSON-able) for ``--output json``."""

    text: str
    data: object

    def render(self, form: str) -> str:
        if form == "json":
            return json.dumps(self.data, indent=2)
        return self.text


def table_output(
    headers: Sequence[str], rows: Sequence[Sequence[object]], empty: str, title: str = ""
) -> Output:
    """A table (or ``empty`` when there are no rows), with an optional line above it."""
    text = render_table(headers, rows) if rows else empty
    return Output(f"{title}\n{text}" if title else text, table_records(headers, rows))
