"""Summaries of repeated trials, the side-by-side table, and the JSON record.

Why summarise per metric: with --repeat on a shared machine, one noisy run should not decide
a figure; the median (or the best, to estimate what the code can do) is taken per column.
"""

import argparse
import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.throughput import Settings, Trial

MB = 1e6


@dataclass(frozen=True)
class Summary:
    broker: str
    runs: int
    produce_mb_s: float
    consume_mb_s: float
    peak_rss_mb: float
    produce_broker_cpu_s_per_gb: float
    consume_broker_cpu_s_per_gb: float
    produce_to_disk_cpu_s_per_gb: float
    produce_broker_cores: float
    consume_broker_cores: float
    produce_client_cores: float
    consume_client_cores: float
    produce_other_cores: float
    consume_other_cores: float
    avg_batch_kb: float


def _ratio(field: str) -> Callable[[Summary, Summary], str]:
    return lambda num, den: f"{getattr(num, field) / getattr(den, field):.2f}x"


def _pair(first: str, second: str, fmt: str) -> Callable[[Summary], str]:
    """A produce/consume pair in one cell, to keep the table narrow."""
    return lambda s: f"{getattr(s, first):{fmt}}/{getattr(s, second):{fmt}}"


def _pair_ratio(first: str, second: str) -> Callable[[Summary, Summary], str]:
    return lambda num, den: f"{getattr(num, first) / getattr(den, first):.2f}x/" + _ratio(second)(num, den)


Cell = Callable[[Summary], str]
Ratio = Callable[[Summary, Summary], str]
# (header, cell, ratio between two brokers or None). Throughput and RSS are the comparison;
# broker CPU per GB compares code cost even on a busy machine; the rest say where time went.
COLUMNS: list[tuple[str, Cell, Ratio | None]] = [
    ("produce MB/s", lambda s: f"{s.produce_mb_s:.0f}", _ratio("produce_mb_s")),
    ("consume MB/s", lambda s: f"{s.consume_mb_s:.0f}", _ratio("consume_mb_s")),
    ("peak RSS MB", lambda s: f"{s.peak_rss_mb:.0f}", _ratio("peak_rss_mb")),
    (
        "broker CPU s/GB P/C",
        _pair("produce_broker_cpu_s_per_gb", "consume_broker_cpu_s_per_gb", ".2f"),
        _pair_ratio("produce_broker_cpu_s_per_gb", "consume_broker_cpu_s_per_gb"),
    ),
    (
        "to-disk CPU s/GB P",
        lambda s: f"{s.produce_to_disk_cpu_s_per_gb:.2f}",
        _ratio("produce_to_disk_cpu_s_per_gb"),
    ),
    ("broker cores P/C", _pair("produce_broker_cores", "consume_broker_cores", ".2f"), None),
    ("client cores P/C", _pair("produce_client_cores", "consume_client_cores", ".2f"), None),
    ("others' cores P/C", _pair("produce_other_cores", "consume_other_cores", ".2f"), None),
    ("batch KB", lambda s: f"{s.avg_batch_kb:.0f}", None),
]


def summarize(trials: Sequence[Trial], how: str) -> Summary:
    """Reduce one broker's trials: throughput by ``how`` (median or best), peak RSS by max
    (the honest peak is the largest seen), CPU and batch size by median."""
    pick: Callable[[list[float]], float] = max if how == "best" else statistics.median
    med = statistics.median

    return Summary(
        broker=trials[0].broker,
        runs=len(trials),
        produce_mb_s=pick([t.produce.mb_per_s for t in trials]),
        consume_mb_s=pick([t.consume.mb_per_s for t in trials]),
        peak_rss_mb=max(t.peak_rss_bytes for t in trials) / MB,
        produce_broker_cpu_s_per_gb=med([t.produce.broker_cpu_s_per_gb for t in trials]),
        consume_broker_cpu_s_per_gb=med([t.consume.broker_cpu_s_per_gb for t in trials]),
        produce_to_disk_cpu_s_per_gb=med([t.produce.to_disk_cpu_s_per_gb for t in trials]),
        produce_broker_cores=med([t.produce.broker_cores for t in trials]),
        consume_broker_cores=med([t.consume.broker_cores for t in trials]),
        produce_client_cores=med([t.produce.client_cores for t in trials]),
        consume_client_cores=med([t.consume.client_cores for t in trials]),
        produce_other_cores=med([t.produce.other_cores for t in trials]),
        consume_other_cores=med([t.consume.other_cores for t in trials]),
        avg_batch_kb=med([t.produce.avg_batch_bytes for t in trials]) / 1e3,
    )


def ratio_row(summaries: Sequence[Summary], numerator: str, denominator: str) -> list[str] | None:
    """``numerator/denominator`` for the columns that compare, when both brokers ran."""
    by_name = {s.broker: s for s in summaries}
    if numerator not in by_name or denominator not in by_name:
        return None
    num, den = by_name[numerator], by_name[denominator]
    return [f"{numerator}/{denominator}", "", *(ratio(num, den) if ratio else "" for _, _, ratio in COLUMNS)]


def table(summaries: Sequence[Summary], ratios: Sequence[tuple[str, str]]) -> str:
    """A plain-text table, right-aligned numbers, with the ratio rows (one per listener kind) last."""
    rows = [["broker", "runs", *(header for header, _, _ in COLUMNS)]]
    rows += [[s.broker, str(s.runs), *(cell(s) for _, cell, _ in COLUMNS)] for s in summaries]
    rows += [row for row in (ratio_row(summaries, *pair) for pair in ratios) if row]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def as_json(settings: Settings, how: str, trials: Sequence[Trial], summaries: Sequence[Summary],
            failures: Sequence[dict[str, str]]) -> dict[str, Any]:  # fmt: skip
    """Everything needed to compare runs later: settings, every trial, the summaries."""
    return {
        "settings": asdict(settings),
        "summary_of_repeats": how,
        "summaries": [asdict(s) for s in summaries],
        "trials": [
            {**asdict(t), "produce_mb_s": t.produce.mb_per_s, "consume_mb_s": t.consume.mb_per_s}
            for t in trials
        ],
        "failures": list(failures),
    }


def report(trials: Mapping[str, Sequence[Trial]], failures: Sequence[dict[str, str]], settings: Settings,
           args: argparse.Namespace, ratios: Sequence[tuple[str, str]],
           extra: Mapping[str, Any] | None = None) -> None:  # fmt: skip
    """Print the table of ``args.summary`` over the repeats, and write ``args.json_out`` if asked
    (with ``extra``: a bench's further figures)."""
    summaries = [summarize(ts, args.summary) for ts in trials.values() if ts]
    if summaries:
        print()
        print(table(summaries, ratios))
        print(f"\n{args.summary} of {args.repeat} run(s); MB = 10^6 value bytes; "
              "cores = CPU seconds / wall seconds during produce/consume; "
              "others' cores = the rest of the machine (noise).")  # fmt: skip
    if args.json_out:
        all_trials = [t for ts in trials.values() for t in ts]
        args.json_out.write_text(
            json.dumps(
                as_json(settings, args.summary, all_trials, summaries, failures) | dict(extra or {}), indent=2
            )
        )


def add_trial_options(parser: argparse.ArgumentParser) -> None:
    """The options of every bench whose trials ``report`` summarises: value size, repeats and
    how to combine them, the phase timeout, the JSON record."""
    parser.add_argument("--value-size", type=int, default=1024, help="bytes per value (default 1024)")
    parser.add_argument("--repeat", type=int, default=1, help="trials per broker, interleaved")
    parser.add_argument(
        "--summary", choices=("median", "best"), default="median", help="how to combine repeats"
    )
    parser.add_argument(
        "--phase-timeout", type=float, default=300.0, help="seconds allowed per produce/consume"
    )
    parser.add_argument("--json-out", type=Path, help="also write every trial and the summary as JSON")


def write_json_out(args: argparse.Namespace, figures: Mapping[str, Any]) -> None:
    """Write ``--json-out``, if given: the run's options under "settings", then ``figures``, so a
    later run can be compared with the options that produced this one (``json_out`` itself is
    left out: a Path is not JSON, and the file says where it is)."""
    if args.json_out:
        settings = vars(args) | {"json_out": None}
        args.json_out.write_text(json.dumps({"settings": settings, **figures}, indent=2))
