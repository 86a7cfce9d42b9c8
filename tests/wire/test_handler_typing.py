"""The type check CI runs catches a handler's misspelt response field and a forgotten error code.

A handler-like module is written to a temporary directory three times (as it should be, with
``error_code`` misspelt, and without it) and checked by mypy with the repository's own
configuration (``[tool.mypy]`` in pyproject.toml), as CI's ``mypy`` step checks the handlers;
then the same mistake is planted in a copy of the real Produce handler.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

HANDLER = """
from __future__ import annotations

from wire.error_codes import ErrorCode
from wire.messages import (
    ProduceResponse,
    ProduceResponsePartitionResponses,
    ProduceResponseRecordErrors,
    ProduceResponseResponses,
)


def partition_error(index: int, code: ErrorCode, message: str | None = None) -> ProduceResponsePartitionResponses:
    return {"index": index, "error_code": code, "base_offset": -1, "error_message": message}


def appended(index: int, offset: int) -> ProduceResponsePartitionResponses:
    return {"index": index, "error_code": ErrorCode.NONE, "base_offset": offset, "log_start_offset": 0}


def with_record_errors(index: int) -> ProduceResponsePartitionResponses:
    errors: list[ProduceResponseRecordErrors] = [{"batch_index": 0, "batch_index_error_message": "no key"}]
    return partition_error(index, ErrorCode.INVALID_RECORD) | {"record_errors": errors}


def answer(name: str, version: int) -> ProduceResponse:
    topic: ProduceResponseResponses = {"partition_responses": [appended(0, 42)]}
    topic["name"] = name
    return {"responses": [topic]}
"""

APPENDED = '"error_code": ErrorCode.NONE, '


def _mypy(tmp_path: Path, *modules: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-error-summary",
            *(str(tmp_path / f"{module}.py") for module in modules),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def handlers(tmp_path: Path) -> Path:
    assert APPENDED in HANDLER
    (tmp_path / "as_written.py").write_text(HANDLER)
    (tmp_path / "misspelt.py").write_text(HANDLER.replace(APPENDED, APPENDED.replace("error", "eror")))
    (tmp_path / "forgotten.py").write_text(HANDLER.replace(APPENDED, ""))
    return tmp_path


def test_the_handler_as_written_passes(handlers: Path) -> None:
    result = _mypy(handlers, "as_written")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_produce_handler_with_a_misspelt_error_code_fails(tmp_path: Path) -> None:
    source = (ROOT / "broker" / "handlers" / "produce.py").read_text()
    appended = '"index": index,\n        "error_code": ErrorCode.NONE,'
    assert source.count(appended) == 1, "the success answer of append_partition moved"
    (tmp_path / "produce_as_written.py").write_text(source)
    (tmp_path / "produce_misspelt.py").write_text(source.replace(appended, appended.replace("error", "eror")))
    assert _mypy(tmp_path, "produce_as_written").returncode == 0
    result = _mypy(tmp_path, "produce_misspelt")
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'Extra key "eror_code" for TypedDict "ProduceResponsePartitionResponses"' in result.stdout


def test_a_misspelt_or_missing_error_code_fails(handlers: Path) -> None:
    result = _mypy(handlers, "misspelt", "forgotten")
    assert result.returncode == 1, result.stdout + result.stderr
    errors = result.stdout.splitlines()
    typed_dict = 'TypedDict "ProduceResponsePartitionResponses"'
    assert any(
        line.startswith(str(handlers / "misspelt.py")) and f'Extra key "eror_code" for {typed_dict}' in line
        for line in errors
    ), result.stdout
    assert any(
        line.startswith(str(handlers / "forgotten.py"))
        and f'Missing key "error_code" for {typed_dict}' in line
        for line in errors
    ), result.stdout
    assert len(errors) == 3, result.stdout  # the misspelt key is also a missing one
