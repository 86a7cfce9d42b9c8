"""Command line for the website-activity pipeline against any Kafka-compatible broker.

    python -m spark_integration.pipeline --bootstrap 127.0.0.1:9092 generate --events 1000
    python -m spark_integration.pipeline --bootstrap 127.0.0.1:9092 stream
    python -m spark_integration.pipeline --bootstrap 127.0.0.1:9092 report

See spark_integration/README.md for what each step does and what it writes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from spark_integration.events import SPACING_MS, generate_events
from spark_integration.jobs import (
    AVAILABLE_NOW,
    await_all,
    parquet_dir,
    run_daily_report,
    start_activity_stream,
)
from spark_integration.publish import create_topic, publish_events
from spark_integration.session import build_session

DEFAULT_TOPIC = "website-activity"
DEFAULT_RESULTS_TOPIC = "page-activity"


def _epoch_ms(text: str) -> int:
    """Parse an ISO-8601 time with a zone (e.g. 2024-05-01T12:00:00Z) into epoch milliseconds."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no time zone; append Z for UTC")
    return int(moment.timestamp() * 1000)


def _generate(args: argparse.Namespace) -> None:
    start_ms = args.start
    if start_ms is None:
        start_ms = int(time.time()) // 60 * 60_000 - args.events * SPACING_MS
    create_topic(args.bootstrap, args.topic, args.partitions)
    events = generate_events(args.events, seed=args.seed, start_ms=start_ms, users=args.users)
    published = publish_events(args.bootstrap, args.topic, events)
    start = datetime.fromtimestamp(start_ms / 1000, UTC).isoformat()
    print(f"published {published} events to {args.topic} (--seed {args.seed} --start {start})")


def _stream(args: argparse.Namespace) -> None:
    spark = build_session("odradek-page-activity")
    create_topic(args.bootstrap, args.results_topic, args.partitions)
    trigger = {"processingTime": f"{args.follow} seconds"} if args.follow else AVAILABLE_NOW
    queries = start_activity_stream(
        spark,
        args.bootstrap,
        args.topic,
        args.results_topic,
        args.work_dir,
        trigger,
        args.max_offsets_per_trigger,
    )
    try:
        await_all(queries)
    finally:
        spark.stop()
    print(f"results in topic {args.results_topic} and {parquet_dir(args.work_dir)}")


def _report(args: argparse.Namespace) -> None:
    spark = build_session("odradek-daily-report")
    try:
        rows = [row.asDict() for row in run_daily_report(spark, args.bootstrap, args.topic).collect()]
    finally:
        spark.stop()
    for row in rows:
        print(f"{row['day']}  {row['page']:<14} events={row['events']:<6} users={row['distinct_users']}")
    if args.output:
        args.output.write_text(json.dumps(rows, indent=2) + "\n")


def parser() -> argparse.ArgumentParser:
    """The CLI: global broker/topic options, then one subcommand per pipeline step."""
    cli = argparse.ArgumentParser(
        prog="python -m spark_integration.pipeline", description=__doc__.split("\n")[0]
    )
    cli.add_argument("--bootstrap", required=True, help="broker address, host:port")
    cli.add_argument("--topic", default=DEFAULT_TOPIC, help="events topic (default %(default)s)")
    steps = cli.add_subparsers(dest="step", required=True)

    generate = steps.add_parser("generate", help="publish deterministic website-activity events")
    generate.add_argument("--events", type=int, default=1000)
    generate.add_argument("--seed", type=int, default=7)
    generate.add_argument("--users", type=int, default=25)
    generate.add_argument(
        "--start",
        type=_epoch_ms,
        help="ISO time of event 0 (default: so that the last event is about now). Keep it within the topic's "
        "retention.ms (7 days by default): the broker deletes older records as expired.",
    )
    generate.add_argument("--partitions", type=int, default=2, help="partitions if the topic is created")
    generate.set_defaults(run=_generate)

    stream = steps.add_parser("stream", help="Structured Streaming: per-page activity per minute")
    stream.add_argument("--results-topic", default=DEFAULT_RESULTS_TOPIC)
    stream.add_argument(
        "--partitions", type=int, default=2, help="partitions if the results topic is created"
    )
    stream.add_argument("--work-dir", type=Path, default=Path("spark-work"), help="checkpoints and Parquet")
    stream.add_argument("--max-offsets-per-trigger", type=int, default=None)
    stream.add_argument(
        "--follow",
        type=int,
        metavar="SECONDS",
        default=0,
        help="keep running with a micro-batch every SECONDS (default: process what is there and stop)",
    )
    stream.set_defaults(run=_stream)

    report = steps.add_parser("report", help="batch job: daily report over the whole events topic")
    report.add_argument("--output", type=Path, help="also write the report as JSON to this file")
    report.set_defaults(run=_report)
    return cli


def main(argv: Sequence[str] | None = None) -> None:
    """Run one pipeline step."""
    args = parser().parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main(sys.argv[1:])
