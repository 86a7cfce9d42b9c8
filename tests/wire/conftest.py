"""Hypothesis strategies derived from the schema declarations, for the codec tests.

Strategies are built from the same declarations the codecs are generated from, so every
API, version and field is exercised without writing a sample per message; the expected
decoded form is computed here independently of :mod:`wire.codegen` (absent fields filled
with their defaults) so the tests also check the decoder's default filling.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import strategies as st

from wire.schema import MISSING, Field
from wire.schemas import ALL_APIS

_INTEGERS = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "uint16": st.integers(0, 2**16 - 1),
}
_SCALARS: dict[str, st.SearchStrategy[Any]] = {
    **_INTEGERS,
    "bool": st.booleans(),
    "float64": st.floats(allow_nan=False),
    "string": st.text(max_size=8),
    "bytes": st.binary(max_size=16),
    "records": st.binary(max_size=32),
    "uuid": st.binary(min_size=16, max_size=16),
}
_MAX_ELEMENTS = 2


class SchemaMessages:
    """Random messages for any (API key, version, direction), and their decoded form."""

    @functools.cache  # noqa: B019 - one instance per test session
    def strategy(self, api_key: int, version: int, direction: str) -> st.SearchStrategy[dict]:
        api = ALL_APIS[api_key]
        return self._struct(_fields(api_key, direction), version, version in api.flexible)

    def expected(self, api_key: int, version: int, direction: str, message: dict) -> dict:
        """What decoding the encoding of ``message`` must return."""
        return _expected_struct(_fields(api_key, direction), version, message)

    def _struct(self, fields: tuple[Field, ...], version: int, flexible: bool) -> st.SearchStrategy[dict]:
        present = {f.name: self._field(f, version, flexible) for f in fields if version in f.versions}
        return st.fixed_dictionaries(present)

    def _field(self, field: Field, version: int, flexible: bool) -> st.SearchStrategy[Any]:
        if field.is_struct:
            value = self._struct(field.fields, version, flexible)
        elif field.is_struct_array:
            value = st.lists(self._struct(field.fields, version, flexible), max_size=_MAX_ELEMENTS)
        elif field.element_type is not None:
            value = st.lists(_SCALARS[field.element_type], max_size=_MAX_ELEMENTS)
        else:
            value = _SCALARS[field.type]
        return st.none() | value if version in field.nullable else value


def _fields(api_key: int, direction: str) -> tuple[Field, ...]:
    api = ALL_APIS[api_key]
    return api.request if direction == "request" else api.response


def _default(field: Field) -> Any:
    if field.is_struct and field.default is MISSING:
        return {sub.name: _default(sub) for sub in field.fields}
    return field.default_value()


def _expected_struct(fields: tuple[Field, ...], version: int, message: dict) -> dict:
    result = {}
    for f in fields:
        if version not in f.versions:
            result[f.name] = _default(f)
            continue
        value = message[f.name]
        if value is not None and f.is_struct:
            value = _expected_struct(f.fields, version, value)
        elif value is not None and f.is_struct_array:
            value = [_expected_struct(f.fields, version, item) for item in value]
        result[f.name] = value
    return result


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run tests taking ``api_key`` once per API, ``api_version`` once per declared version."""
    if "api_key" in metafunc.fixturenames:
        metafunc.parametrize("api_key", list(ALL_APIS), ids=[api.name for api in ALL_APIS.values()])
    if "api_version" in metafunc.fixturenames:
        params = [(api.key, version) for api in ALL_APIS.values() for version in api.versions]
        ids = [f"{ALL_APIS[key].name}-v{version}" for key, version in params]
        metafunc.parametrize("api_version", params, ids=ids)


@pytest.fixture(scope="session")
def schema_messages() -> SchemaMessages:
    return SchemaMessages()
