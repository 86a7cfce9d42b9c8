"""The committed declarations are exactly what the pinned kafka-clients specs say.

The specs are read from the real jar (fetched with Maven, as ``python -m wire.schemagen``
does), so a hand edit of a generated module, a translation bug, or a pin bumped without
regenerating fails here.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from wire.api_keys import ApiKey
from wire.schema import Api, RecordSchema
from wire.schemagen import (
    DECLARED_FLOORS,
    INTERNAL_TOPICS,
    Declaration,
    InternalTopic,
    declarations,
    record_declarations,
)
from wire.schemagen.render import GENERATED_MARKER, existing_docstring, module_name, render_module
from wire.schemagen.specs import KAFKA_CLIENTS_VERSION, SpecSet, load
from wire.schemas import ALL_APIS

SCHEMAS_DIR = Path(__file__).resolve().parents[2] / "wire" / "schemas"


@pytest.fixture(scope="module")
def specs() -> SpecSet:
    return load(KAFKA_CLIENTS_VERSION)


@pytest.fixture(scope="module")
def generated(specs: SpecSet) -> dict[ApiKey, Declaration]:
    return declarations(specs)


def test_every_api_a_kafka_broker_serves_is_declared(generated: dict[ApiKey, Declaration]) -> None:
    assert set(ALL_APIS) == set(generated)
    assert len(ALL_APIS) >= 70  # Kafka 4.3's broker serves 77 APIs


def test_declarations_match_the_pinned_specs(generated: dict[ApiKey, Declaration]) -> None:
    drifted = [key.api_name for key, declaration in generated.items() if ALL_APIS[key] != declaration.api]
    assert drifted == [], f"regenerate with `python -m wire.schemagen`: {drifted} differ from the specs"


def test_each_module_names_the_specs_it_came_from(generated: dict[ApiKey, Declaration]) -> None:
    for key, declaration in generated.items():
        source = (SCHEMAS_DIR / f"{module_name(declaration.api)}.py").read_text()
        header = f"{GENERATED_MARKER} from kafka-clients {KAFKA_CLIENTS_VERSION}"
        assert header in source, key.api_name
        assert f"{declaration.spec_names[0]}.json" in source, key.api_name


def test_versions_are_kafkas_stable_ones_with_the_documented_floors(specs: SpecSet) -> None:
    for key, (request, _) in specs.apis().items():
        declared = ALL_APIS[ApiKey(key)].versions
        valid_high = int(request["validVersions"].split("-")[-1])
        unstable = request.get("latestVersionUnstable", False)
        assert declared.high == (valid_high - 1 if unstable else valid_high), ApiKey(key).api_name
        assert declared.low == DECLARED_FLOORS.get(ApiKey(key), int(request["validVersions"].split("-")[0]))


def test_rendered_module_declares_what_it_was_rendered_from(generated: dict[ApiKey, Declaration]) -> None:
    """The renderer loses nothing: executing its output gives back the same declaration."""
    for declaration in generated.values():
        docstring = '"""Escapes stay as written: \\\\0."""'
        source = render_module(declaration.api, docstring, "kafka-clients test", declaration.spec_names)
        assert existing_docstring(source) == docstring
        namespace: dict[str, object] = {}
        exec(compile(source, module_name(declaration.api), "exec"), namespace)
        rendered = namespace[declaration.api.key.name]
        assert isinstance(rendered, Api)
        assert rendered == declaration.api


@pytest.mark.parametrize("topic", INTERNAL_TOPICS, ids=lambda topic: topic.module)
def test_internal_topic_records_match_the_pinned_specs(topic: InternalTopic) -> None:
    module = importlib.import_module(f"wire.internal_records.{topic.module}")
    declared = [value for value in vars(module).values() if isinstance(value, RecordSchema)]
    assert declared == record_declarations(topic, load(KAFKA_CLIENTS_VERSION, topic.artifact))
    assert (
        f"{GENERATED_MARKER} from {topic.artifact} {KAFKA_CLIENTS_VERSION}"
        in Path(module.__file__).read_text()
    )
