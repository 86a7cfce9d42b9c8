"""The replicated bench, run tiny on a three-broker Odradek cluster: RF 3, acks=all, every byte
back, the three brokers measured together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from bench.__main__ import main
from bench.replicated import cluster, parse_args, settings_of
from bench.throughput import measure
from compat_tests.kit.etcd_cluster import etcd_binary

pytestmark = pytest.mark.skipif(etcd_binary() is None, reason="etcd is not installed (etcd-server)")


def test_a_trial_replicates_every_partition_to_three_brokers_and_reads_it_all_back() -> None:
    settings = settings_of(parse_args(["--megabytes", "0.3", "--partitions", "3", "--phase-timeout", "60"]))
    with cluster("odradek", {}) as brokers:
        assert len(set(brokers.pids)) == 3
        trial = measure(brokers, settings)
        admin = AdminClient(brokers.librdkafka())
        topic = admin.list_topics(settings.topic, timeout=10).topics[settings.topic]
        (configs,) = admin.describe_configs([ConfigResource("topic", settings.topic)]).values()
        min_insync = configs.result(timeout=10)["min.insync.replicas"].value
    assert trial.produce.bytes == trial.consume.bytes == 292 * 1024  # 0.3 MB of 1 KiB values
    assert len(trial.node_peak_rss_bytes) == 3 and trial.peak_rss_bytes == max(trial.node_peak_rss_bytes)
    assert sorted(len(p.replicas) for p in topic.partitions.values()) == [3, 3, 3]
    assert min_insync == "2"


def test_the_subcommand_writes_the_table_and_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "replicated.json"
    argv = ["replicated", "--brokers", "odradek", "--megabytes", "0.2", "--json-out", str(out)]
    assert main([*argv, "--latency-rate", "100", "--latency-seconds", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3].split()[:3] == ["broker", "nodes", "RF"]
    assert [line.split()[:3] for line in lines[-2:]] == [["odradek", "3", "3"], ["odradek", "1", "1"]]
    record = json.loads(out.read_text())
    assert record["settings"]["replication_factor"] == 3 and record["settings"]["idempotent"]
    assert [len(trial["node_peak_rss_bytes"]) for trial in record["trials"]] == [3]
    cluster_run, single_run = record["latency"]  # the cluster's, then a single broker's (RF 1)
    assert (cluster_run["brokers"], single_run["brokers"]) == (3, 1)
    for latency in (cluster_run, single_run):
        assert latency["messages"] == 100 and 0 < latency["e2e"]["p50_ms"] <= latency["e2e"]["p99_ms"]
        assert latency["cpu_ms_per_record"] > 0


def test_only_the_two_cluster_kinds_are_known() -> None:
    with pytest.raises(SystemExit):
        parse_args(["--brokers", "odradek,tansu"])
