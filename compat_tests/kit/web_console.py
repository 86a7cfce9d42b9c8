"""The web console's test harness: an ``odradek console`` process and a real headless Chromium.

The browser is Debian's ``chromium`` driven through its own ``chromedriver`` (Selenium is told
where it is, so nothing is downloaded).  Without them the browser tests are skipped, except in
CI (``CI`` set), where .ci/run installs both and their absence is a failure, not a silent skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

from compat_tests.kit.brokers import free_ports, launch, odradek_command

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
READY_S = 20.0
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@dataclass(frozen=True)
class RunningConsole:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path


def wait_until_serving(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the console exited ({process.returncode}): {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/static/console.css", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.1)
    raise RuntimeError(f"the console did not serve within {READY_S} s: {log_path.read_text()[-2000:]}")


@contextmanager
def console_process(bootstrap: str, workdir: Path, *options: str) -> Iterator[RunningConsole]:
    """``odradek console`` for ``bootstrap`` on a free port, stopped (SIGTERM) when the block ends."""
    workdir.mkdir(parents=True, exist_ok=True)
    (port,) = free_ports(1)
    command = [
        odradek_command(),
        "console",
        "--bootstrap",
        bootstrap,
        "--listen",
        f"127.0.0.1:{port}",
        *options,
    ]
    log_path = workdir / "console.log"
    process = launch(command, workdir, log_path)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process, log_path)
        yield RunningConsole(url, process, log_path)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def require_chromium() -> None:
    """Skip (or, in CI, fail) a browser test where Chromium or its driver is not installed."""
    if shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER):
        return
    if os.environ.get("CI"):
        pytest.fail("chromium and chromium-driver are not installed but CI is set: .ci/run must install them")
    pytest.skip("the browser tests need Debian's chromium and chromium-driver (apt-get install them)")


@contextmanager
def headless_chromium() -> Iterator[WebDriver]:
    """A Selenium WebDriver for headless Chromium, quit when the block ends."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(argument)
    browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    browser.set_page_load_timeout(30)
    try:
        yield browser
    finally:
        browser.quit()


def screenshot(browser: WebDriver, name: str) -> None:
    """``docs/screenshots/NAME.png`` of what the browser shows, when ODRADEK_SCREENSHOTS is set."""
    if os.environ.get("ODRADEK_SCREENSHOTS"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
