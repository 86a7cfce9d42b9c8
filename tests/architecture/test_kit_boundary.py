"""The test suites share code through one kit: ``tests/`` imports the compatibility suite only
through ``compat_tests.kit``, and the compatibility suite (which also runs against Apache Kafka)
never imports ``tests/``.

grimp (import-linter's graph) reads the imports, those under ``TYPE_CHECKING`` and inside
functions included. The check is a test rather than an ``.importlinter`` contract because that
file's contracts are also run over copies of the production packages alone
(``test_layers.py``), where ``tests`` and ``compat_tests`` do not exist.
"""

from __future__ import annotations

import grimp
import pytest

KIT = "compat_tests.kit"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("tests", "compat_tests", cache_dir=None)


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def imports_between(graph: grimp.ImportGraph, importer: str, imported: str) -> list[tuple[str, str]]:
    """Every direct import from a module of ``importer`` to one of ``imported``."""
    return sorted(
        (module, target)
        for module in graph.find_children(importer) | graph.find_descendants(importer) | {importer}
        for target in graph.find_modules_directly_imported_by(module)
        if in_package(target, imported)
    )


def test_tests_import_the_compat_suite_only_through_the_kit(graph: grimp.ImportGraph) -> None:
    outside = [
        (module, target)
        for module, target in imports_between(graph, "tests", "compat_tests")
        if not in_package(target, KIT)
    ]
    assert outside == [], "tests/ must import compat_tests through compat_tests.kit"


def test_the_compat_suite_never_imports_tests(graph: grimp.ImportGraph) -> None:
    assert imports_between(graph, "compat_tests", "tests") == []


def test_the_check_sees_imports(graph: grimp.ImportGraph) -> None:
    """A check that found no import at all would pass on anything."""
    found = imports_between(graph, "tests", "compat_tests")
    assert ("tests.integration.conftest", "compat_tests.kit.broker_process") in found
    assert any(target == "compat_tests.kit.raw_protocol" for _, target in found)
