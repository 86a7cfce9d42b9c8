"""Resolve Java artifacts with Maven into a cached directory of jars.

The suite needs two kinds of Java classpaths: Apache Kafka's broker (to check that every scenario
is right against the reference implementation) and kafka-clients (the Java client). Both come
from Maven's default central repository through ``mvn dependency:copy-dependencies`` on a small
generated pom, so Maven does the transitive resolution and its own download cache (``~/.m2``)
is reused. The resulting jar directory is cached under ``$ODRADEK_CACHE`` (default
``~/.cache/odradek``) so later runs start without touching the network at all.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from xml.sax.saxutils import escape

MAVEN_TIMEOUT_S = 900
COMPLETE_MARKER = ".complete"

SLF4J_BINDING = "org.slf4j:slf4j-simple:1.7.36"
"""Kafka's broker and kafka-clients log through slf4j 1.7 but ship no binding in their poms;
without one in the classpath their logs are empty."""


def cache_root() -> Path:
    """The directory that keeps resolved jars and compiled classes between runs."""
    root = Path(os.environ.get("ODRADEK_CACHE") or Path.home() / ".cache" / "odradek")
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Serialise cache writers: the Spark tests may resolve the same jars from another process."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _pom(artifacts: Sequence[str]) -> str:
    """A throwaway pom whose only purpose is to list the wanted artifacts as dependencies."""
    deps = []
    for coordinate in artifacts:
        group, artifact, version = coordinate.split(":")
        deps.append(
            "<dependency>"
            f"<groupId>{escape(group)}</groupId><artifactId>{escape(artifact)}</artifactId>"
            f"<version>{escape(version)}</version>"
            "</dependency>"
        )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">'
        "<modelVersion>4.0.0</modelVersion>"
        "<groupId>odradek.compat</groupId><artifactId>resolve</artifactId><version>1</version>"
        f"<dependencies>{''.join(deps)}</dependencies>"
        "</project>\n"
    )


def resolve_jars(name: str, artifacts: Sequence[str]) -> Path:
    """Return a directory holding ``artifacts`` and their runtime dependencies as jars.

    ``name`` identifies the set in the cache (include the versions in it); a set is resolved once
    and then reused. Resolution happens in a temporary directory that is renamed into place only
    when Maven succeeded, so an interrupted run never leaves a half-filled cache behind.
    """
    dest = cache_root() / name / "libs"
    if (dest / COMPLETE_MARKER).exists():
        return dest
    if shutil.which("mvn") is None:
        raise RuntimeError("Maven (mvn) is not installed: it is needed to resolve " + ", ".join(artifacts))
    with file_lock(cache_root() / f"{name}.lock"):
        if (dest / COMPLETE_MARKER).exists():
            return dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
            pom = Path(tmp) / "pom.xml"
            pom.write_text(_pom(artifacts))
            out = Path(tmp) / "libs"
            result = subprocess.run(
                [
                    "mvn",
                    "-q",
                    "-B",
                    "-f",
                    str(pom),
                    "dependency:copy-dependencies",
                    f"-DoutputDirectory={out}",
                    "-DincludeScope=runtime",
                ],
                capture_output=True,
                text=True,
                timeout=MAVEN_TIMEOUT_S,
            )
            if result.returncode != 0:
                tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
                raise RuntimeError(f"mvn could not resolve {', '.join(artifacts)}:\n{tail}")
            (out / COMPLETE_MARKER).write_text("\n".join(artifacts) + "\n")
            shutil.rmtree(dest, ignore_errors=True)
            out.rename(dest)
    return dest


def compiled_classes(source: Path, libs: Path, cache_name: str, *uses: Path) -> Path:
    """``source`` compiled with ``javac`` against the jars in ``libs`` (and the classes
    directories ``uses``, themselves from this function): a cached classes directory.

    Keyed by the source's hash and the directories it uses under ``cache_name``, so an edited
    source, or one of the classes it uses, is compiled again and an unchanged one never is;
    written to a temporary directory and renamed into place.
    """
    if shutil.which("javac") is None:
        raise RuntimeError(f"javac is not installed: it is needed to build {source.name}")
    key = source.read_bytes() + "".join(f"\n{used.name}" for used in uses).encode()
    digest = hashlib.sha256(key).hexdigest()[:16]
    classes = cache_root() / cache_name / f"classes-{source.stem}-{digest}"
    with file_lock(cache_root() / f"{cache_name}.lock"):
        if not (classes / f"{source.stem}.class").exists():
            tmp = classes.with_name(classes.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            result = subprocess.run(
                ["javac", "--release", "17", "-d", str(tmp), "-cp", classpath(libs, *uses), str(source)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if result.returncode != 0:
                raise RuntimeError(f"javac failed for {source.name} ({cache_name}):\n{result.stderr[-3000:]}")
            tmp.rename(classes)
    return classes


def classpath(*entries: Path) -> str:
    """A java ``-cp`` value; a directory of resolved jars is given as ``dir/*`` so the JVM expands it."""
    return os.pathsep.join(f"{e}/*" if (e / COMPLETE_MARKER).exists() else str(e) for e in entries)
