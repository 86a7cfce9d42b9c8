"""A small disk for one node's log directory, to fill up under it: a tmpfs of its own.

A full disk is a fault a broker must survive without losing acknowledged writes (Kafka takes
the log directory offline, and with it a single-directory broker). A file system of its own is
the only way to fill one node's disk and not the others' (or the machine's); mounting a tmpfs
needs root or CAP_SYS_ADMIN, which CI may lack, so :func:`unavailable` says why it cannot be done
here, for the fault to be skipped with that reason.
"""

from __future__ import annotations

import errno
import subprocess
import tempfile
from pathlib import Path

SIZE_MB = 256
"""Room for an hour of the nemesis workload's log (a few dozen MB) and Kafka's sparse index files."""
FILLER = "nemesis-filler"
CHUNK_BYTES = 1 << 20
PAGE_BYTES = 4096


def unavailable() -> str | None:
    """Why a tmpfs cannot be mounted here (None: it can)."""
    with tempfile.TemporaryDirectory(prefix="odradek-tmpfs-probe-") as probe:
        try:
            _mount(Path(probe), 1)
        except (OSError, RuntimeError) as exc:
            return f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {exc}"
        _unmount(Path(probe))
    return None


class SmallDisk:
    """A tmpfs of :data:`SIZE_MB` mounted at ``path`` (created empty), filled and freed on demand."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        _mount(path, SIZE_MB)

    def fill(self) -> int:
        """Write a file until the disk is full, down to the last page; return its size."""
        written = 0
        with (self.path / FILLER).open("ab", buffering=0) as filler:
            for size in (CHUNK_BYTES, PAGE_BYTES):
                block = bytes(size)
                try:
                    while True:
                        written += filler.write(block) or 0
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
        return written

    def free(self) -> None:
        """Remove the filler: the node's writes find room again."""
        (self.path / FILLER).unlink(missing_ok=True)

    def unmount(self) -> None:
        """Unmount (lazily: a killed node's files may still be closing); the data is gone."""
        _unmount(self.path)


def _mount(path: Path, size_mb: int) -> None:
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if mounted.returncode != 0:
        raise RuntimeError((mounted.stderr or mounted.stdout).strip() or f"mount exited {mounted.returncode}")


def _unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30, check=False)
