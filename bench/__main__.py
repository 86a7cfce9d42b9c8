"""``python -m bench``: produce/consume throughput of Odradek and Tansu, side by side, in one run.

``python -m bench scale ...`` runs the many-partitions, many-connections comparison instead
(``bench.scale``).

Why both brokers in one run: this machine is shared and noisy, so figures from different
runs do not compare; interleaving the brokers within one run (and --repeat) does. The same
holds for plaintext against TLS (``--security plaintext,tls``): every broker in every mode
takes its turn in each repeat.
"""

import argparse
import json
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

from bench import scale
from bench.launchers import make_launchers, names_of, securities
from bench.report import as_json, summarize, table
from bench.throughput import Settings, Trial, run_trial


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--messages", type=int, help="messages per trial")
    size.add_argument("--megabytes", type=float, default=1000.0, help="value MB per trial (default 1000)")
    parser.add_argument("--value-size", type=int, default=1024, help="bytes per value (default 1024)")
    parser.add_argument("--partitions", type=int, default=4, help="topic partitions (default 4)")
    parser.add_argument(
        "--brokers", default="odradek,tansu", help="comma-separated, from: odradek,apache-kafka,tansu"
    )
    parser.add_argument(
        "--security",
        default="plaintext",
        help="comma-separated listener kinds, from: plaintext,tls (a TLS listener for Odradek and Apache Kafka)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="trials per broker, interleaved")
    parser.add_argument(
        "--summary", choices=("median", "best"), default="median", help="how to combine repeats"
    )
    parser.add_argument(
        "--phase-timeout", type=float, default=300.0, help="seconds allowed per produce/consume"
    )
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for odradek serve (repeatable)")  # fmt: skip
    parser.add_argument("--override-all", action="append", default=[], metavar="KEY=VALUE",
                        help="config override for Odradek and Apache Kafka alike (repeatable)")  # fmt: skip
    parser.add_argument(
        "--transaction-records",
        type=int,
        default=0,
        metavar="N",
        help="produce transactionally, committing every N records (acks=all, idempotent)",
    )
    parser.add_argument("--json-out", type=Path, help="also write every trial and the summary as JSON")
    return parser.parse_args(argv)


def _exit_on_sigterm(_signum: int, _frame: object) -> NoReturn:
    """Turn SIGTERM into SystemExit so the finally blocks stop the brokers."""
    sys.exit(128 + signal.SIGTERM)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["scale"]:
        return scale.main(argv[1:])
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-tls-") as certificates:
        return run(args, Path(certificates))


def run(args: argparse.Namespace, certificates: Path) -> int:
    """Every trial of every broker in every listener kind, interleaved; the table; the JSON."""
    messages = args.messages or int(args.megabytes * 1e6 // args.value_size)
    settings = Settings(
        messages,
        args.value_size,
        args.partitions,
        phase_timeout_s=args.phase_timeout,
        transaction_records=args.transaction_records,
    )
    modes = securities(args.security, certificates)
    launchers = [
        launcher
        for security in modes
        for launcher in make_launchers(args.brokers, args.override, args.override_all, security)
    ]
    if not launchers:
        return 2
    mb = messages * args.value_size / 1e6
    names = ", ".join(la.name for la in launchers)
    mode = (f"transactions of {args.transaction_records} records (acks=all)" if args.transaction_records
            else "acks=1")  # fmt: skip
    print(f"{messages} messages x {args.value_size} B = {mb:.0f} MB, {args.partitions} partitions, "
          f"{mode}, no compression; brokers: {names}", flush=True)  # fmt: skip

    trials: dict[str, list[Trial]] = {la.name: [] for la in launchers}
    failures: list[dict[str, str]] = []
    for rep in range(1, args.repeat + 1):
        for launcher in launchers:
            print(f"[{rep}/{args.repeat}] {launcher.name}: starting", flush=True)
            started = time.monotonic()
            try:
                trial = run_trial(launcher, settings)
            except Exception as exc:  # one broker failing must not hide the other's figures
                print(f"[{rep}/{args.repeat}] {launcher.name}: FAILED: {exc}", flush=True)
                failures.append({"broker": launcher.name, "repeat": str(rep), "error": str(exc)})
                continue
            trials[launcher.name].append(trial)
            print(f"[{rep}/{args.repeat}] {launcher.name}: produce {trial.produce.mb_per_s:.0f} MB/s, "
                  f"consume {trial.consume.mb_per_s:.0f} MB/s, peak RSS {trial.peak_rss_bytes / 1e6:.0f} MB "
                  f"({time.monotonic() - started:.0f}s)", flush=True)  # fmt: skip

    summaries = [summarize(ts, args.summary) for ts in trials.values() if ts]
    if summaries:
        print()
        reference = next((name for name in names_of(args.brokers) if name != "odradek"), "tansu")
        suffixes = [f"+{security.label}" if security.label else "" for security in modes]
        print(table(summaries, ratios=[(f"odradek{s}", f"{reference}{s}") for s in suffixes]))
        print(f"\n{args.summary} of {args.repeat} run(s); MB = 10^6 value bytes; "
              "cores = CPU seconds / wall seconds during produce/consume; "
              "others' cores = the rest of the machine (noise).")  # fmt: skip
    if args.json_out:
        all_trials = [t for ts in trials.values() for t in ts]
        args.json_out.write_text(
            json.dumps(as_json(settings, args.summary, all_trials, summaries, failures), indent=2)
        )
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # the brokers were already stopped by their context managers
        sys.exit("interrupted")
