"""``python -m broker.config.configgen [--version V]``: regenerate ``broker/config/kafka_dynamic_keys.py``.

Reads the dynamic broker keys of Kafka ``V`` (default: wire/schemagen's pin) from its jars,
keeps the module's hand-written docstring, and formats the result with ruff.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from broker.config.configgen import load, render_module
from wire.schemagen.render import existing_docstring, format_generated
from wire.schemagen.specs import KAFKA_CLIENTS_VERSION

MODULE = Path(__file__).resolve().parent.parent / "kafka_dynamic_keys.py"
FIRST_DOCSTRING = '"""Apache Kafka\'s dynamic broker keys (generated; see broker/config/configgen)."""'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m broker.config.configgen", description=__doc__)
    parser.add_argument("--version", default=KAFKA_CLIENTS_VERSION, help="Kafka release to read the keys of")
    args = parser.parse_args(argv)
    found = load(args.version)
    old = MODULE.read_text() if MODULE.exists() else None
    MODULE.write_text(render_module(found, existing_docstring(old) or FIRST_DOCSTRING))
    format_generated([MODULE])
    print(f"wrote {MODULE.name}: {len(found.keys)} dynamic keys of Kafka {args.version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
