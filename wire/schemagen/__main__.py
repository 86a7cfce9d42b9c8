"""``python -m wire.schemagen [--version V]``: regenerate ``wire/schemas``, ``wire/internal_records``
and ``wire/messages.py``.

Writes one module per API a Kafka broker serves and one per internal topic, keeping each
existing module's docstring, then formats them with ruff, then the messages' static types
(:mod:`.typed`).  Run it after changing the pinned version in :mod:`.specs`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wire.schemagen import INTERNAL_TOPICS, declarations, record_declarations
from wire.schemagen.render import (
    existing_docstring,
    format_generated,
    module_name,
    render_module,
    render_records_module,
)
from wire.schemagen.specs import KAFKA_CLIENTS_VERSION, load
from wire.schemagen.typed import write_messages

WIRE_DIR = Path(__file__).resolve().parent.parent
SCHEMAS_DIR = WIRE_DIR / "schemas"
RECORDS_DIR = WIRE_DIR / "internal_records"


def _write(path: Path, render) -> Path:
    """Write ``render(docstring of the file there now)`` to ``path``."""
    old = path.read_text() if path.exists() else None
    path.write_text(render(existing_docstring(old)))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wire.schemagen", description=__doc__)
    parser.add_argument("--version", default=KAFKA_CLIENTS_VERSION, help="Kafka release to read the specs of")
    args = parser.parse_args(argv)
    specs = load(args.version)
    declared = declarations(specs)
    written = [
        _write(
            SCHEMAS_DIR / f"{module_name(d.api)}.py",
            lambda doc, d=d: render_module(d.api, doc, specs.source, d.spec_names),
        )
        for d in declared.values()
    ]
    for topic in INTERNAL_TOPICS:
        topic_specs = load(args.version, topic.artifact)
        records = record_declarations(topic, topic_specs)
        written.append(
            _write(
                RECORDS_DIR / f"{topic.module}.py",
                lambda doc, records=records, source=topic_specs.source: render_records_module(
                    records, doc, source
                ),
            )
        )
    format_generated(written)
    written.append(write_messages(d.api for d in declared.values()))
    print(f"wrote {len(written)} modules from the specs of Kafka {args.version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
