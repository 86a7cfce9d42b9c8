"""Scraping a broker's Prometheus endpoint in tests, parsed by prometheus_client's own parser."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


class Scrape:
    """The samples of one scrape: ``value(name, **labels)`` sums the samples whose labels
    include ``labels`` (so a family summed over its versions or partitions is one call)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.samples = [
            (sample.name, sample.labels, sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        ]

    def value(self, name: str, **labels: str) -> float:
        return sum(
            value
            for sample_name, sample_labels, value in self.samples
            if sample_name == name and labels.items() <= sample_labels.items()
        )

    def series(self, name: str) -> list[dict[str, str]]:
        """The label sets of every sample called ``name``."""
        return [sample_labels for sample_name, sample_labels, _ in self.samples if sample_name == name]


def scrape(port: int, host: str = "127.0.0.1") -> Scrape:
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=30) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=")
        return Scrape(response.read().decode())
