"""Kafka's message specs, read straight out of a kafka-clients jar.

The jar holds every request, response and record schema as ``common/message/<Name>.json``
(JSON with ``//`` comment lines).  They are read in memory and never written anywhere: the
project commits only the declarations generated from them.  The jar comes from Maven (the
same resolver the compatibility suite uses for Kafka's own jars), so regenerating needs
nothing but ``mvn`` and the version to pin.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KAFKA_CLIENTS_VERSION = "4.3.1"
"""The Kafka release the committed declarations come from (the compatibility suite's Apache
Kafka is the same release): kafka-clients for the protocol, kafka-group-coordinator for the
records of ``__consumer_offsets``."""

_SPEC_PATH = re.compile(r"common/message/(?P<name>\w+)\.json")
_COMMENT_LINE = re.compile(r"^\s*//.*$", re.MULTILINE)
MAVEN_TIMEOUT_S = 600


@dataclass(frozen=True)
class SpecSet:
    """Every message spec of one jar, by spec name (``ProduceRequest``)."""

    source: str
    specs: dict[str, dict[str, Any]]

    def apis(self) -> dict[int, tuple[dict[str, Any], dict[str, Any]]]:
        """Request and response spec per API key, for the APIs a broker serves."""
        found: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
        for name, request in self.specs.items():
            if request.get("type") != "request" or "broker" not in request.get("listeners", ()):
                continue
            response = self.specs[name.removesuffix("Request") + "Response"]
            found[request["apiKey"]] = (request, response)
        return dict(sorted(found.items()))


def parse_spec(text: str) -> dict[str, Any]:
    """One spec file: JSON once its whole-line ``//`` comments are removed."""
    return json.loads(_COMMENT_LINE.sub("", text))


def read_jar(jar: Path, label: str) -> SpecSet:
    """The specs inside ``jar``; ``label`` names their origin in generated headers."""
    specs: dict[str, dict[str, Any]] = {}
    with zipfile.ZipFile(jar) as archive:
        for entry in archive.namelist():
            match = _SPEC_PATH.fullmatch(entry)
            if match:
                specs[match["name"]] = parse_spec(archive.read(entry).decode("utf-8"))
    if not specs:
        raise FileNotFoundError(f"{jar} holds no common/message/*.json specs")
    return SpecSet(label, specs)


def local_repository_jar(version: str = KAFKA_CLIENTS_VERSION, artifact: str = "kafka-clients") -> Path:
    """Where Maven's default local repository keeps ``org.apache.kafka:<artifact>:<version>``
    once anything has resolved it (the compatibility suite's preparation does)."""
    return Path.home().joinpath(
        ".m2", "repository", "org", "apache", "kafka", artifact, version, f"{artifact}-{version}.jar"
    )


def fetch_jar(version: str, artifact: str, out: Path) -> Path:
    """Download ``org.apache.kafka:<artifact>:<version>`` with Maven into ``out``; the jar's path."""
    if shutil.which("mvn") is None:
        raise RuntimeError("Maven (mvn) is needed to fetch the kafka-clients jar the specs come from")
    result = subprocess.run(
        [
            "mvn",
            "-q",
            "-B",
            "dependency:copy",
            f"-Dartifact=org.apache.kafka:{artifact}:{version}",
            f"-DoutputDirectory={out}",
        ],
        capture_output=True,
        text=True,
        timeout=MAVEN_TIMEOUT_S,
        cwd=out,
    )
    jar = out / f"{artifact}-{version}.jar"
    if result.returncode != 0 or not jar.exists():
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
        raise RuntimeError(f"mvn could not fetch {artifact} {version}:\n{tail}")
    return jar


def load(version: str = KAFKA_CLIENTS_VERSION, artifact: str = "kafka-clients") -> SpecSet:
    """The specs in ``org.apache.kafka:<artifact>:<version>``: from Maven's local repository when
    the jar is there (starting Maven costs seconds of CPU, and the drift tests load five jars),
    else fetched with Maven into a directory removed after reading."""
    label = f"{artifact} {version}"
    cached = local_repository_jar(version, artifact)
    if cached.is_file():
        return read_jar(cached, label)
    with tempfile.TemporaryDirectory(prefix="odradek-specs-") as out:
        return read_jar(fetch_jar(version, artifact, Path(out)), label)
