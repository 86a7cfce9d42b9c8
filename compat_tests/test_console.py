"""The Odradek Console (``odradek console``) in a real headless Chromium, against either broker.

Every page is opened against a broker holding this module's topics, text, JSON and binary
records, a classic group with lag, a consumer group (KIP-848) with a live member and ACLs,
and the assertions are on what a person sees: a record's value, the lag number, a chart with
points, an error page that names the missing ACL or the vanished topic.  The broker runs
Kafka's StandardAuthorizer (allowing what no ACL names), so ACLs exist on both brokers; against
a broker given with ``--bootstrap`` that has no authorizer, DescribeAcls answers
SECURITY_DISABLED and the ACL scenarios skip, saying so.  One browser and two consoles (one
read-only, one started with ``--allow-writes``) serve the whole module, sampling every second
so the charts fill quickly.  With ``ODRADEK_SCREENSHOTS=1`` the main pages are saved to
``docs/screenshots/`` for the README.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from compat_tests.helpers import eventually, poll_until
from compat_tests.kit.brokers import RunningBroker, free_ports, odradek_cli
from compat_tests.kit.drivers.admin import Acl
from compat_tests.kit.drivers.base import ConsumerSettings, Message, ProducerSettings
from compat_tests.kit.drivers.catalog import ADMINS
from compat_tests.kit.raw_groups import find_coordinator, share_join, streams_join
from compat_tests.kit.raw_protocol import addresses_by_id, ask
from compat_tests.kit.web_console import (
    RunningConsole,
    console_process,
    headless_chromium,
    require_chromium,
    screenshot,
)
from compat_tests.pools import BrokerPool, DriverPool
from compat_tests.test_acls import AUTHORIZER
from wire.api_keys import ApiKey

pytestmark = pytest.mark.xdist_group("console")
"""One worker runs the module (CI's --dist loadgroup), so it starts one browser, one broker and two consoles."""

SAMPLE = ("--sample-seconds", "1")
PAGE_WAIT_S = 30
JSON_VALUE = {"order": 7, "item": "teapot", "price": 12.5}
BINARY_VALUE = bytes([0, 1, 2, 0xFF, 0xFE])
TEXT_VALUE = b"hello from the console test"


@dataclass(frozen=True)
class Cluster:
    """What the module put on the broker."""

    broker: RunningBroker
    prefix: str
    orders: str
    raw: str
    billing: str
    live_group: str

    def new_topic(self, drivers: DriverPool, suffix: str, partitions: int = 1) -> str:
        """A topic of one scenario, created now."""
        name = f"{self.prefix}-{suffix}"
        drivers.get("confluent-kafka", self.broker.bootstrap).create_topic(name, partitions)
        return name


@pytest.fixture(scope="module")
def console_broker(brokers: BrokerPool) -> RunningBroker:
    """A broker with an authorizer the suite starts, else the one given with --bootstrap."""
    return brokers.get(AUTHORIZER) if brokers.bootstrap is None else brokers.get()


@pytest.fixture(scope="module")
def filled(console_broker: RunningBroker, drivers: DriverPool) -> Iterator[Cluster]:
    """Topics with text, JSON and binary records, a classic group with lag, a live consumer group."""
    prefix = f"console-{uuid.uuid4().hex[:8]}"
    cluster = Cluster(
        console_broker, prefix, f"{prefix}-orders", f"{prefix}-raw", f"{prefix}-billing", f"{prefix}-live"
    )
    admin = drivers.get("confluent-kafka", console_broker.bootstrap)
    admin.create_topic(cluster.orders, 3)
    admin.create_topic(cluster.raw, 1)
    records = [
        Message(json.dumps({**JSON_VALUE, "n": i}).encode(), key=f"k{i}".encode(), partition=i % 3)
        for i in range(12)
    ]
    records.append(Message(TEXT_VALUE, key=b"greeting", headers=(("source", b"test"),), partition=0))
    admin.produce(cluster.orders, records, ProducerSettings())
    admin.produce(cluster.raw, [Message(BINARY_VALUE, key=b"\x00\x01", partition=0)], ProducerSettings())
    with admin.consumer(ConsumerSettings(group=cluster.billing)) as billing:
        billing.assign({(cluster.orders, p): 0 for p in range(3)})
        billing.commit({(cluster.orders, 0): 1, (cluster.orders, 1): 1, (cluster.orders, 2): 1})
    live = admin.consumer(ConsumerSettings(group=cluster.live_group, group_protocol="consumer"))
    try:
        live.subscribe([cluster.raw])
        poll_until(live, 1)
        yield cluster
    finally:
        live.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    require_chromium()
    with headless_chromium() as driver:
        yield driver


@pytest.fixture(scope="module")
def reader(filled: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    """A read-only console."""
    with console_process(filled.broker.bootstrap, tmp_path_factory.mktemp("console-ro"), *SAMPLE) as console:
        yield console


@pytest.fixture(scope="module")
def writer(filled: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    """A console started with --allow-writes."""
    workdir = tmp_path_factory.mktemp("console-rw")
    with console_process(filled.broker.bootstrap, workdir, *SAMPLE, "--allow-writes") as console:
        yield console


def visit(browser: WebDriver, console: RunningConsole, path: str) -> None:
    browser.get(console.url + path)


def text(browser: WebDriver, css: str) -> str:
    return browser.find_element(By.CSS_SELECTOR, css).text


def count(browser: WebDriver, css: str) -> int:
    return len(browser.find_elements(By.CSS_SELECTOR, css))


def submit(browser: WebDriver, form: str, fields: dict[str, str]) -> str:
    """Fill and post one of the page's forms as a person would; the result page's text."""
    for name, value in fields.items():
        field = browser.find_element(By.CSS_SELECTOR, f"#{form} [name={name}]")
        if field.tag_name == "select":
            field.find_element(By.CSS_SELECTOR, f"option[value='{value}']").click()
        else:
            field.clear()
            field.send_keys(value)
    posted = browser.find_element(By.ID, form)
    posted.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    # The answer is a new page: wait until the form's page is gone and the next one is there.
    WebDriverWait(browser, PAGE_WAIT_S).until(expected_conditions.staleness_of(posted))
    return (
        WebDriverWait(browser, PAGE_WAIT_S)
        .until(expected_conditions.presence_of_element_located((By.TAG_NAME, "main")))
        .text
    )


def test_cluster_page(browser: WebDriver, reader: RunningConsole, filled: Cluster) -> None:
    visit(browser, reader, "/")
    brokers = text(browser, "#brokers")
    assert all(
        f"{node} {address}" in brokers for node, address in addresses_by_id(filled.broker.bootstrap).items()
    )
    assert text(browser, "#under-replicated-count") == "0"
    assert count(browser, "#distribution svg rect") > 0
    assert "PRODUCE" in browser.find_element(By.ID, "apis").get_attribute("textContent")
    screenshot(browser, "cluster")


def test_topics_page_searches(browser: WebDriver, reader: RunningConsole, filled: Cluster) -> None:
    visit(browser, reader, f"/topics?q={filled.prefix}")
    rows = {
        row.get_attribute("data-topic"): row
        for row in browser.find_elements(By.CSS_SELECTOR, "#topics tbody tr")
    }
    assert {filled.orders, filled.raw} <= set(rows)
    assert rows[filled.orders].find_element(By.CSS_SELECTOR, ".records").text == "13"
    screenshot(browser, "topics")


def test_topic_page_with_produce_rate(
    browser: WebDriver, reader: RunningConsole, filled: Cluster, drivers: DriverPool
) -> None:
    ticks = filled.new_topic(drivers, "ticks", 2)
    producer = drivers.get("confluent-kafka", filled.broker.bootstrap)

    def rate_drawn() -> None:
        producer.produce(ticks, [Message(b"tick", partition=1)], ProducerSettings())
        visit(browser, reader, f"/topics/{ticks}")
        assert count(browser, "#produce-rate svg circle") >= 2

    eventually(rate_drawn, timeout_s=20, interval_s=0.5)
    assert text(browser, "#partitions tbody tr:first-child td:nth-child(5)") == "0"
    assert int(text(browser, "#topic-records")) >= 2
    screenshot(browser, "topic")


def test_message_browser_shows_text_json_and_binary(
    browser: WebDriver, reader: RunningConsole, filled: Cluster
) -> None:
    visit(browser, reader, f"/topics/{filled.orders}/messages?mode=offset&partition=0&offset=0&limit=50")
    values = text(browser, "#messages")
    assert TEXT_VALUE.decode() in values
    assert '"item": "teapot"' in values  # pretty JSON, one field a line
    assert "source: test" in values
    browser.find_element(By.ID, "message-filter").send_keys("hello from")
    shown = [
        row for row in browser.find_elements(By.CSS_SELECTOR, "#messages tr.record") if row.is_displayed()
    ]
    assert len(shown) == 1 and TEXT_VALUE.decode() in shown[0].text
    visit(browser, reader, f"/topics/{filled.orders}/messages")  # newest first, every partition
    assert int(text(browser, "#record-count")) >= 13
    screenshot(browser, "messages")
    visit(browser, reader, f"/topics/{filled.raw}/messages?view=auto")
    assert "00 01 02 ff fe" in text(browser, "#messages .value")
    visit(browser, reader, f"/topics/{filled.orders}/messages?mode=time&time=2000-01-01T00:00Z&limit=5")
    assert text(browser, "#record-count") == "5"


def test_groups_show_types_members_and_lag(
    browser: WebDriver, reader: RunningConsole, filled: Cluster
) -> None:
    def lag_sampled() -> None:
        visit(browser, reader, "/groups")
        row = browser.find_element(By.CSS_SELECTOR, f"#groups tr[data-group='{filled.billing}']")
        assert row.text.split()[1:3] == ["classic", "Empty"] and row.text.endswith(" 10")

    eventually(lag_sampled, timeout_s=15)
    live = browser.find_element(By.CSS_SELECTOR, f"#groups tr[data-group='{filled.live_group}']").text
    assert " consumer " in live and "Stable" in live
    screenshot(browser, "groups")
    visit(browser, reader, f"/groups/{filled.billing}")
    assert text(browser, "#total-lag") == "10"
    assert [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "#lag td.lag")] == ["4", "3", "3"]
    assert count(browser, "#lag-chart svg circle") > 0 and count(browser, "#lag-chart svg path") == 1
    screenshot(browser, "group")
    visit(browser, reader, f"/groups/{filled.live_group}")
    assert f"{filled.raw}-0" in text(browser, "#members")


def test_share_and_streams_groups_are_shown(
    browser: WebDriver, reader: RunningConsole, filled: Cluster
) -> None:
    """A share group and a streams group (each a member joined by a raw heartbeat, no JVM) are
    listed with their types, and each group's page shows its member."""
    bootstrap = filled.broker.bootstrap
    queue, app = f"{filled.prefix}-queue", f"{filled.prefix}-app"
    members = {queue: f"{filled.prefix}-worker", app: f"member-{app}"}

    def heartbeats() -> None:  # a streams member's session is 10 s on the suite's brokers
        for group in (queue, app):
            find_coordinator(bootstrap, group)
        shared = ask(
            bootstrap, ApiKey.SHARE_GROUP_HEARTBEAT, 1, share_join(queue, [filled.raw], members[queue]), 10.0
        )
        streams = ask(bootstrap, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, streams_join(app, filled.raw), 10.0)
        assert shared["error_code"] == streams["error_code"] == 0, (shared, streams)

    def listed() -> None:
        heartbeats()
        visit(browser, reader, "/groups")
        rows = {
            g: browser.find_element(By.CSS_SELECTOR, f"#groups tr[data-group='{g}']").text
            for g in (queue, app)
        }
        assert " share " in rows[queue] and " streams " in rows[app], rows

    eventually(listed, timeout_s=PAGE_WAIT_S)
    for group, member in members.items():
        visit(browser, reader, f"/groups/{group}")
        assert member in text(browser, "#members")


def test_security_page_lists_acls_and_users(
    browser: WebDriver, reader: RunningConsole, filled: Cluster
) -> None:
    result = odradek_cli(
        "users", "set", f"{filled.prefix}-user", "--mechanism", "SCRAM-SHA-256", "--password", "pw",
        "--bootstrap", filled.broker.bootstrap,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    visit(browser, reader, "/security")
    if count(browser, "#no-authorizer"):
        pytest.skip("the broker has no authorizer (DescribeAcls answered SECURITY_DISABLED): no ACLs to show")
    with ADMINS["confluent-kafka"](filled.broker.bootstrap) as admin:
        # A topic of its own: with an ACL on it, ANONYMOUS (everyone else here) may not read it.
        admin.create_acls([Acl("TOPIC", f"{filled.prefix}-audited", "User:alice", "READ")])

    def listed() -> None:
        visit(browser, reader, "/security")
        assert f"User:alice ALLOW READ TOPIC {filled.prefix}-audited LITERAL *" in text(browser, "#acls")

    eventually(listed, timeout_s=15)
    assert f"{filled.prefix}-user SCRAM-SHA-256 4096" in text(browser, "#users")
    screenshot(browser, "security")


def test_a_missing_acl_is_named(
    browser: WebDriver, reader: RunningConsole, filled: Cluster, drivers: DriverPool
) -> None:
    visit(browser, reader, "/security")
    if count(browser, "#no-authorizer"):
        pytest.skip(
            "the broker has no authorizer (DescribeAcls answered SECURITY_DISABLED): nothing is refused"
        )
    hidden = filled.new_topic(drivers, "hidden")
    with ADMINS["confluent-kafka"](filled.broker.bootstrap) as admin:
        admin.create_acls([Acl("TOPIC", hidden, "User:ANONYMOUS", "DESCRIBE", "DENY")])

    def refused() -> None:
        visit(browser, reader, f"/topics/{hidden}")
        assert text(browser, "#failure h1") == "Not authorized"

    eventually(refused, timeout_s=15)
    assert f"ALLOW ACL for DESCRIBE on TOPIC {hidden}" in text(browser, "#failure")


def test_a_vanished_topic_is_a_404_page(
    browser: WebDriver, reader: RunningConsole, filled: Cluster, drivers: DriverPool
) -> None:
    doomed = filled.new_topic(drivers, "doomed")
    visit(browser, reader, f"/topics/{doomed}")
    assert text(browser, "h1") == f"Topic {doomed}"
    drivers.get("confluent-kafka", filled.broker.bootstrap).delete_topic(doomed)

    def gone() -> None:
        visit(browser, reader, f"/topics/{doomed}")
        assert "does not exist (any more)" in text(browser, "#failure")

    eventually(gone, timeout_s=15)


def test_an_unreachable_broker_is_named(browser: WebDriver, tmp_path: Path) -> None:
    (port,) = free_ports(1)
    with console_process(f"127.0.0.1:{port}", tmp_path) as console:
        visit(browser, console, "/topics")
        assert text(browser, "#failure h1") == "The broker cannot be reached"
        assert f"cannot reach a broker at 127.0.0.1:{port}" in text(browser, "#failure")


def test_read_only_console_refuses_writes(
    browser: WebDriver, reader: RunningConsole, filled: Cluster
) -> None:
    visit(browser, reader, f"/topics/{filled.orders}")
    assert count(browser, "form.write") == 0
    request = urllib.request.Request(
        f"{reader.url}/topics/{filled.orders}/produce",
        data=b"value=sneaky",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 403
    assert "--allow-writes" in refused.value.read().decode()


def test_writes_through_forms(browser: WebDriver, writer: RunningConsole, filled: Cluster) -> None:
    created = f"{filled.prefix}-created"
    visit(browser, writer, "/topics")
    assert f"Created topic {created} with 2 partition(s)" in submit(
        browser, "create-topic", {"name": created, "partitions": "2"}
    )
    visit(browser, writer, f"/topics/{created}")
    assert "Produced one record" in submit(
        browser,
        "produce",
        {"partition": "1", "key": "k", "value": "typed in a browser", "headers": "via=form"},
    )
    visit(browser, writer, f"/topics/{created}/messages?partition=1")
    assert "typed in a browser" in text(browser, "#messages")
    visit(browser, writer, f"/topics/{created}")
    assert f"Set retention.ms=3600000 on {created}" in submit(
        browser, "alter-config", {"key": "retention.ms", "value": "3600000"}
    )
    visit(browser, writer, f"/topics/{created}")
    assert "retention.ms 3600000 DYNAMIC_TOPIC_CONFIG" in text(browser, "#configs")
    assert f"Deleted the records of {created}-1 below offset 1" in submit(
        browser, "delete-records", {"partition": "1", "before": "-1"}
    )
    visit(browser, writer, f"/groups/{filled.billing}")
    assert "Reset the offsets" in submit(
        browser, "reset-offsets", {"scenario": "to-earliest", "topic": filled.orders}
    )
    visit(browser, writer, f"/groups/{filled.billing}")
    assert [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "#lag td.lag")] == ["5", "4", "4"]


def test_reset_is_refused_while_the_group_has_members(
    browser: WebDriver, writer: RunningConsole, filled: Cluster, drivers: DriverPool
) -> None:
    with drivers.get("confluent-kafka", filled.broker.bootstrap).consumer(
        ConsumerSettings(group=f"{filled.prefix}-busy")
    ) as busy:
        busy.subscribe([filled.orders])
        poll_until(busy, 5)
        visit(browser, writer, f"/groups/{filled.prefix}-busy")
        page = submit(browser, "reset-offsets", {"scenario": "to-latest"})
    assert "Assignments can only be reset if the group" in page and "is inactive" in page
