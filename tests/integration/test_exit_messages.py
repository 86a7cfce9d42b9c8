"""How ``odradek serve`` and its sync process end when something outside them goes wrong: a port
already taken is one line saying so and what to do (not trio's nested exception groups), and a
broker killed with ``kill -9`` leaves no traceback from its sync process (issue 25)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from broker.client.admin_client import PRODUCE_VERSION, produce_body
from compat_tests.kit.broker_process import OdradekProcess
from compat_tests.kit.brokers import odradek_command
from compat_tests.kit.raw_protocol import RawClient, make_batch
from tests.integration.waiting import wait_until
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

START_BOUND_S = 60  # how long a broken start may keep the test waiting; nothing is timed


@contextmanager
def taken_port() -> Iterator[int]:
    """A port on 127.0.0.1 that another process (this test) listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``odradek serve`` with ``args``, run until it exits."""
    command = [odradek_command(), "serve", "--data-dir", str(tmp_path / "data"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=START_BOUND_S, check=False)


def assert_one_line(
    finished: subprocess.CompletedProcess[str],
    expected_start: str,
    remedy: str,
    reason: str = "Address already in use",
) -> None:
    assert finished.returncode == 1, finished
    assert "Traceback" not in finished.stderr and "ExceptionGroup" not in finished.stderr, finished.stderr
    (line,) = finished.stderr.splitlines()
    assert line.startswith(f"odradek: {expected_start}: {reason}."), line
    assert remedy in line, line


def test_a_listener_port_in_use_is_one_line_and_a_failed_exit(tmp_path: Path) -> None:
    with taken_port() as port:
        finished = serve(tmp_path, "--listeners", f"PLAINTEXT://127.0.0.1:{port}")
    assert_one_line(finished, f"Socket server failed to bind to 127.0.0.1:{port}", "--listeners")


def test_a_metrics_port_in_use_is_one_line_and_a_failed_exit(tmp_path: Path) -> None:
    with taken_port() as port:
        finished = serve(
            tmp_path,
            "--listeners",
            "PLAINTEXT://127.0.0.1:0",
            "--override",
            f"metrics.listener=http://127.0.0.1:{port}",
        )
    assert_one_line(finished, f"Metrics endpoint failed to bind to 127.0.0.1:{port}", "metrics.listener")


def test_a_host_that_is_not_this_machines_is_one_line_and_a_failed_exit(tmp_path: Path) -> None:
    finished = serve(tmp_path, "--listeners", "PLAINTEXT://192.0.2.1:9092")  # TEST-NET-1, RFC 5737
    assert_one_line(
        finished,
        "Socket server failed to bind to 192.0.2.1:9092",
        "not an address of this machine",
        "Cannot assign requested address",
    )


def has_exited(pid: int) -> bool:
    """Gone, or a zombie nobody reaped yet (it was the broker's child, not ours)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_the_sync_process_exits_without_a_traceback_when_the_broker_is_killed(tmp_path: Path) -> None:
    """The broker dies with a sync request in flight: the sync process (stopped meanwhile, so
    the request waits for it) then syncs for a broker that is gone and cannot answer it."""
    broker = OdradekProcess(tmp_path / "broker", {"log.flush.interval.messages": "1"}).start()
    pid = broker.process.pid
    (sync_process,) = (int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
    segment = broker.data_dir / "synced-0" / "00000000000000000000.log"
    try:
        with RawClient(broker.bootstrap) as client:
            client.create_topic("synced", 1)
            assert client.produce("synced", 0, make_batch([b"synced"]))["error_code"] == ErrorCode.NONE
            synced_size = segment.stat().st_size
            os.kill(sync_process, signal.SIGSTOP)
            client.send_request(
                ApiKey.PRODUCE, PRODUCE_VERSION, produce_body("synced", {0: make_batch([b"v"])})
            )
            wait_until(lambda: segment.stat().st_size > synced_size, "the second batch appended")
            broker.kill()
    finally:
        if broker.is_running:
            broker.kill()
        os.kill(sync_process, signal.SIGCONT)
    wait_until(lambda: has_exited(sync_process), "the sync process exited")
    log = broker.log_text()
    assert "Traceback" not in log, log[-3000:]
