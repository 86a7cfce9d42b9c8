"""The pyspark pin (``pyproject.toml``, extra ``spark``) and Spark's Kafka connector.

The connector ``spark-sql-kafka-0-10_2.13`` is resolved at the installed pyspark's version
(:func:`spark_integration.session.connector_coordinate`) and must be that exact release, so
the pin is the newest pyspark whose connector and its dependencies resolve from the
repositories reachable here. Tried on 2026-11-24, with an empty Ivy cache and
``spark_integration/ivysettings.xml``:

- 4.3.0: its connector is not published where it can be reached (as reported in issue 13);
- 4.2.0: resolves; the whole Spark suite passes (the pin);
- 4.0.0: resolves (the previous pin).

A bump: change the pin in ``pyproject.toml``, add a line here, run ``python -m pytest
spark_integration``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pyspark

from spark_integration.session import connector_coordinate

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def pinned_pyspark() -> str:
    extra = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]["spark"]
    (requirement,) = [r for r in extra if r.startswith("pyspark==")]
    return requirement.removeprefix("pyspark==")


def test_the_installed_pyspark_is_the_pinned_one() -> None:
    assert pyspark.__version__ == pinned_pyspark()


def test_the_connector_is_resolved_at_the_installed_version() -> None:
    assert connector_coordinate() == f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"
