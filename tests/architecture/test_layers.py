"""The import contracts of docs/ARCHITECTURE.md hold, and would catch a breach.

``lint-imports`` (import-linter) runs over the repository's ``.importlinter``; the same check
over a copy with one planted upward import must fail, or the contract proves nothing. Cycles
are checked apart: a layers contract allows modules of one layer to import each other.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("wire", "log", "coordinator", "broker")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_contracts_hold() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def planted_copy(tmp_path: Path, module: str, line: str) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    target = tmp_path / (module.replace(".", "/") + ".py")
    target.write_text(target.read_text() + "\n" + line + "\n")
    return tmp_path


def test_a_planted_upward_import_fails(tmp_path: Path) -> None:
    # A service reaching up for the node, under TYPE_CHECKING as the old cycle did.
    root = planted_copy(
        tmp_path,
        "broker.services.storage.durability",
        "if TYPE_CHECKING:\n    from broker.node.server import Broker  # noqa: F401",
    )
    result = lint_imports(root)
    assert result.returncode != 0
    assert "broker/ layers import only downward BROKEN" in result.stdout
    assert "broker.services.storage.durability -> broker.node.server" in result.stdout


def test_a_handler_importing_another_fails(tmp_path: Path) -> None:
    root = planted_copy(
        tmp_path, "broker.handlers.produce", "from broker.handlers.fetch import HANDLERS as _"
    )
    result = lint_imports(root)
    assert result.returncode != 0
    assert "a handler module imports no other handler module" in result.stdout
    assert "BROKEN" in result.stdout


def import_cycles(package: str) -> list[set[str]]:
    """Strongly connected components of more than one module in ``package``'s import graph."""
    graph = grimp.build_graph(package, include_external_packages=False)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[set[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm; the graph is a few hundred modules
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(component)

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return cycles


def test_broker_has_no_import_cycle() -> None:
    assert import_cycles("broker") == []


def test_the_message_types_cost_nothing_at_run_time() -> None:
    """wire/messages.py (thousands of TypedDicts, ~4 MB and ~75 ms to import) is for the type
    checker: every module imports it under ``TYPE_CHECKING``, so a running broker never loads it."""
    probe = "import sys, broker.node.server, broker.cli.main; print('wire.messages' in sys.modules)"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    assert loaded.stdout.strip() == "False"
