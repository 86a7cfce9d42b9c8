"""``odradek groups reset-offsets``, ``delete-offsets`` and ``delete``, as kafka-consumer-groups.sh.

A reset is planned for the chosen partitions (``--topic T`` / ``--topic T:0,2`` /
``--all-topics``) with one scenario (``--to-earliest``, ``--to-latest``, ``--to-current``,
``--to-offset N``, ``--shift-by N``, ``--to-datetime``, ``--by-duration``), clamped to each partition's
[earliest, latest] with Kafka's warnings, shown, and committed only with ``--execute``
(``--dry-run`` is the default, as Kafka's).  A group with members is refused with Kafka's
message: their next commit would overwrite the reset anyway.  ``delete-offsets`` removes
the chosen partitions' committed offsets (OffsetDelete), which Kafka refuses per partition for
topics a member is subscribed to.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from broker.cli.admin import topic_partitions
from broker.cli.progress import Progress
from broker.cli.registry import AdminError, action
from broker.cli.table import Output, table_output
from broker.client.admin_client import EARLIEST, LATEST, KafkaConnection
from wire.error_codes import ErrorCode

Partition = tuple[str, int]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
INACTIVE_STATES = ("Empty", "Dead")
# Partitions per ListOffsets/OffsetCommit request: bounded requests, and steps for the bar.
CHUNK = 500
NO_EXECUTE_WARNING = (
    "WARN: No action will be performed as the --execute option is missing. "
    "Add --dry-run explicitly if you are scripting this command and want to keep this behaviour."
)


def warn(message: str) -> None:
    print(message, file=sys.stderr)


def chunks(items: list[Partition]) -> Iterator[list[Partition]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def parse_datetime_ms(text: str) -> int:
    """Kafka's ``YYYY-MM-DDTHH:mm:SS.sss`` with an optional zone (``Z``, ``+hh:mm``); no zone is local time."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise AdminError(
            f"Error parsing timestamp {text!r}: use the format YYYY-MM-DDTHH:mm:SS.sss, "
            "optionally with a zone such as Z or +01:00"
        ) from exc
    aware = moment if moment.tzinfo is not None else moment.astimezone()
    return (aware - EPOCH) // timedelta(milliseconds=1)  # exact: no float milliseconds


DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", re.IGNORECASE)


def parse_duration(text: str) -> timedelta:
    """Kafka's ``--by-duration`` format, ISO-8601's ``PnDTnHnMnS`` (``PT6H``, ``P1DT30M``)."""
    match = DURATION.fullmatch(text)
    if match is None or not any(match.groups()) or text.upper().endswith("T"):
        raise AdminError(f"Error parsing duration {text!r}: use the format PnDTnHnMnS, e.g. PT6H or P1DT30M")
    days, hours, minutes, seconds = (float(g or 0) for g in match.groups())
    return timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


def target_time_ms(args: argparse.Namespace) -> int | None:
    """The time ``--to-datetime`` or ``--by-duration`` (back from now) points at, if either."""
    if args.to_datetime:
        return parse_datetime_ms(args.to_datetime)
    if args.by_duration:
        return (datetime.now(UTC) - parse_duration(args.by_duration) - EPOCH) // timedelta(milliseconds=1)
    return None


def chosen_partitions(
    conn: KafkaConnection, args: argparse.Namespace, committed: dict[Partition, int], no_scope: str
) -> list[Partition]:
    """``--all-topics`` (what the group committed) or the ``--topic`` specs; ``no_scope`` when neither."""
    if args.all_topics:
        return sorted(committed)
    if not args.topic:
        raise AdminError(no_scope)
    chosen: set[Partition] = set()
    for spec in args.topic:
        topic, _, numbers = spec.partition(":")
        existing = topic_partitions(conn, topic)
        if not numbers:
            chosen.update((topic, p) for p in existing)
            continue
        for number in numbers.split(","):
            if not number.strip().isdigit() or int(number) not in existing:
                raise AdminError(
                    f"topic {topic!r} has no partition {number.strip()!r} (it has {len(existing)})"
                )
            chosen.add((topic, int(number)))
    return sorted(chosen)


def log_offsets(
    conn: KafkaConnection, partitions: list[Partition], timestamp: int, bar: Progress
) -> dict[Partition, int]:
    """ListOffsets for ``timestamp`` over ``partitions``, a chunk of one topic per request."""
    found: dict[Partition, int] = {}
    for chunk in chunks(partitions):
        for topic in sorted({t for t, _ in chunk}):
            numbers = [p for t, p in chunk if t == topic]
            found.update({(topic, p): o for p, o in conn.list_offsets(topic, numbers, timestamp).items()})
        bar.advance(len(chunk))
    return found


def clamp(partition: Partition, offset: int, earliest: int, latest: int) -> int:
    name = f"{partition[0]}-{partition[1]}"
    if offset > latest:
        warn(
            f"WARN New offset ({offset}) is higher than latest offset for topic partition {name}. Value will be set to {latest}"
        )
        return latest
    if offset < earliest:
        warn(
            f"WARN New offset ({offset}) is lower than earliest offset for topic partition {name}. Value will be set to {earliest}"
        )
        return earliest
    return offset


def plan(
    conn: KafkaConnection,
    args: argparse.Namespace,
    partitions: list[Partition],
    committed: dict[Partition, int],
) -> dict[Partition, int]:
    """The new offset of every partition under the chosen scenario."""
    target = target_time_ms(args)
    with Progress(len(partitions) * (2 if target is None else 3), "planning offsets") as bar:
        earliest = log_offsets(conn, partitions, EARLIEST, bar)
        latest = log_offsets(conn, partitions, LATEST, bar)
        by_time = {} if target is None else log_offsets(conn, partitions, target, bar)
    new = {}
    for partition in partitions:
        current = committed.get(partition, -1)
        if args.to_earliest:
            new[partition] = earliest[partition]
        elif args.to_latest:
            new[partition] = latest[partition]
        elif args.to_current:
            new[partition] = current if current >= 0 else latest[partition]
        elif args.to_offset is not None:
            new[partition] = clamp(partition, args.to_offset, earliest[partition], latest[partition])
        elif args.shift_by is not None:
            if current < 0:
                raise AdminError(
                    f"Cannot shift offset for partition {partition[0]}-{partition[1]} since there is no current committed offset"
                )
            new[partition] = clamp(partition, current + args.shift_by, earliest[partition], latest[partition])
        elif by_time[partition] >= 0:
            new[partition] = by_time[partition]
        else:
            warn(
                f"Warn: Partition {partition[1]} from topic {partition[0]} is empty. Falling back to latest known offset."
            )
            new[partition] = latest[partition]
    return new


def commit(conn: KafkaConnection, group: str, offsets: dict[Partition, int]) -> None:
    failed = {}
    with Progress(len(offsets), "committing offsets") as bar:
        for chunk in chunks(sorted(offsets)):
            errors = conn.commit_offsets(group, {p: offsets[p] for p in chunk})
            failed.update({p: code for p, code in errors.items() if code})
            bar.advance(len(chunk))
    if failed:
        details = ", ".join(f"{t}-{p}: {ErrorCode(code).name}" for (t, p), code in sorted(failed.items()))
        raise AdminError(f"Error: committing the new offsets of group '{group}' failed for {details}")


def groups_reset_offsets(conn: KafkaConnection, args: argparse.Namespace) -> Output:
    state = conn.describe_group(args.group)["group_state"]
    if state not in INACTIVE_STATES:
        raise AdminError(
            f"Error: Assignments can only be reset if the group '{args.group}' is inactive, "
            f"but the current state is {state}."
        )
    committed = conn.committed_offsets(args.group)
    scope = chosen_partitions(
        conn, args, committed, "One of the reset scopes should be defined: --all-topics, --topic."
    )
    new = plan(conn, args, scope, committed)
    if args.execute:
        commit(conn, args.group, new)
    elif not args.dry_run:
        warn(NO_EXECUTE_WARNING)
    rows = [[args.group, topic, partition, offset] for (topic, partition), offset in sorted(new.items())]
    return table_output(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], rows, "no partitions to reset")


def groups_delete_offsets(conn: KafkaConnection, args: argparse.Namespace) -> Output:
    no_scope = "Option --delete-offsets requires either --all-topics or --topic to be specified."
    partitions = chosen_partitions(conn, args, conn.committed_offsets(args.group), no_scope)
    error, results = conn.delete_offsets(args.group, partitions)
    if error:
        raise AdminError(f"Error: deleting offsets from group '{args.group}' failed: {ErrorCode(error).name}")
    rows = [
        [topic, partition, f"Error: {ErrorCode(code).name}" if code else "Successful"]
        for (topic, partition), code in sorted(results.items())
    ]
    table = table_output(["TOPIC", "PARTITION", "STATUS"], rows, "no partitions")
    if any(results.values()):
        raise AdminError(
            f"Error: Encountered some partition-level error, see the follow-up details.\n{table.text}"
        )
    return Output(
        f"Request succeeded for deleting offsets from group {args.group}.\n\n{table.text}", table.data
    )


def groups_delete(conn: KafkaConnection, args: argparse.Namespace) -> Output:
    results = conn.delete_groups(args.group)
    deleted = [g for g in args.group if results.get(g) == ErrorCode.NONE]
    failed = {
        g: ErrorCode(results[g]).name if g in results else "no answer" for g in args.group if g not in deleted
    }
    quoted = "', '".join(deleted)
    if failed:
        lines = ["Error: Deletion of some consumer groups failed:"]
        lines += [f"* Group '{g}' could not be deleted due to: {error}" for g, error in failed.items()]
        if deleted:
            lines.append(f"These consumer groups were deleted successfully: '{quoted}'.")
        raise AdminError("\n".join(lines))
    return Output(f"Deletion of requested consumer groups ('{quoted}') was successful.", {"deleted": deleted})


def scoped(parser: argparse.ArgumentParser) -> None:
    """A group and its partitions: ``--topic`` (repeatable) or ``--all-topics``."""
    parser.add_argument("group")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--topic", action="append", metavar="TOPIC[:P,P]", help="a topic, or some of its partitions"
    )
    scope.add_argument("--all-topics", action="store_true", help="every partition the group has committed")


def add_group_offset_actions(groups: argparse._SubParsersAction) -> None:
    """Register ``groups reset-offsets``, ``delete-offsets`` and ``delete``."""
    reset = action(groups, "reset-offsets", groups_reset_offsets, "move a group's committed offsets")
    scoped(reset)
    scenario = reset.add_mutually_exclusive_group(required=True)
    scenario.add_argument("--to-earliest", action="store_true")
    scenario.add_argument("--to-latest", action="store_true")
    scenario.add_argument("--to-current", action="store_true")
    scenario.add_argument("--to-offset", type=int, metavar="N")
    scenario.add_argument(
        "--shift-by", type=int, metavar="N", help="from the committed offset (negative goes back)"
    )
    scenario.add_argument(
        "--by-duration", metavar="PnDTnHnMnS", help="first offset at or after now minus this"
    )
    scenario.add_argument(
        "--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss", help="first offset at or after a time"
    )
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the plan only (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    scoped(
        action(groups, "delete-offsets", groups_delete_offsets, "delete some committed offsets of a group")
    )
    delete = action(groups, "delete", groups_delete, "delete empty groups and their committed offsets")
    delete.add_argument("group", nargs="+")
