"""An ``odradek serve`` subprocess that tests can stop, kill -9 and restart.

Unlike :func:`compat_tests.kit.brokers.start_odradek`, the data directory and port survive a restart,
so clients reconnect to the same address and the broker must recover what it stored.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path

from compat_tests.kit.brokers import RunningBroker, free_ports, odradek_command, wait_until_ready


class OdradekProcess:
    """One broker process with a fixed port and data directory."""

    def __init__(
        self, workdir: Path, overrides: Mapping[str, str] | None = None, log_level: str = "INFO"
    ) -> None:
        self.workdir = workdir
        self.data_dir = workdir / "data"
        (self.port,) = free_ports(1)
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.overrides = {"group.initial.rebalance.delay.ms": "0", **(overrides or {})}
        self.log_path = workdir / "odradek.log"
        self.log_level = log_level
        self._running: RunningBroker | None = None

    def start(self) -> OdradekProcess:
        command = [
            odradek_command(),
            "serve",
            "--data-dir",
            str(self.data_dir),
            "--listeners",
            f"PLAINTEXT://127.0.0.1:{self.port}",
            "--log-level",
            self.log_level,
        ]
        for key, value in self.overrides.items():
            command += ["--override", f"{key}={value}"]
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        self._running = RunningBroker(self.bootstrap, "odradek", process, self.log_path, self.overrides)
        wait_until_ready(self._running)
        return self

    @property
    def is_running(self) -> bool:
        running = self._running
        return running is not None and running.process is not None and running.process.poll() is None

    @property
    def process(self) -> subprocess.Popen[bytes]:
        assert self._running is not None and self._running.process is not None, "broker not started"
        return self._running.process

    def stop(self) -> int:
        """Clean shutdown (SIGTERM); returns the exit code."""
        if self._running is not None:
            self._running.stop()
        return self.process.returncode

    def kill(self) -> None:
        """Crash the broker: SIGKILL, no chance to flush or write a clean-shutdown marker."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def restart(self, *, crash: bool = False) -> OdradekProcess:
        """Stop the broker (cleanly, or with ``crash`` as :meth:`kill` does) and start it again."""
        if crash:
            self.kill()
        else:
            self.stop()
        return self.start()

    def __enter__(self) -> OdradekProcess:
        """Started for a ``with`` block, stopped cleanly when it ends."""
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
