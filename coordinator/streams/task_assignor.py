"""Kafka's sticky task assignor for streams groups (KIP-1071), as Kafka 4.3 runs it.

A task is (subtopology, partition). The assignor places every task as an active task on one
member, and each task of a stateful subtopology (one with changelog topics) ``replicas`` more
times as a standby task, on members of other processes: a standby on the active task's
process (or on a process already holding a copy) would be no standby at all.

Balance is by process, not by member: a process (one Kafka Streams instance) with more
members (stream threads) takes proportionally more tasks; its load is its task count over its
member count. Stickiness comes first, within quotas that keep the balance: each member may
hold at most its share of active tasks (``ceil(tasks / members)``, recomputed as members fill
up) and of all tasks. In order:

1. every active task goes back to the member that had it, while that member is under its
   active quota; then to the least loaded member that had it as a standby;
2. the rest go, one by one, to the least loaded member of the least loaded process;
3. standby copies go to the task's previous active owner if its process does not hold the
   task now, then to the least loaded of its previous standby owners whose process does not
   hold it, each under its total quota; the rest to the least loaded member of the least
   loaded process that does not hold the task (a copy that finds no such process is dropped).

Kafka 4.3.1's assignor assigns no warm-up tasks (and its broker refuses heartbeats reporting
any), so neither does this one. Ties Kafka leaves to hash order are broken by process and
member id, so the same group always gets the same assignment.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

Task = tuple[str, int]
"""(subtopology id, partition)."""
Tasks = Mapping[str, frozenset[int]]
"""Tasks by subtopology id."""


@dataclass(frozen=True)
class TaskMember:
    """What the assignor knows of one member: its process and its previous target tasks."""

    member_id: str
    process_id: str
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)


@dataclass(frozen=True)
class TaskAssignment:
    active: dict[str, frozenset[int]]
    standby: dict[str, frozenset[int]]


@dataclass
class _Process:
    """A process's members and the tasks placed on it so far."""

    process_id: str
    counts: dict[str, int] = field(default_factory=dict)  # member -> tasks (active and standby)
    active: dict[str, set[Task]] = field(default_factory=dict)
    standby: dict[str, set[Task]] = field(default_factory=dict)
    held: set[Task] = field(default_factory=set)

    @property
    def load(self) -> float:
        return sum(self.counts.values()) / len(self.counts)

    def order(self) -> tuple[float, str]:
        return self.load, self.process_id

    def add(self, member_id: str, task: Task, active: bool) -> int:
        """Place ``task`` on ``member_id``; its task count after."""
        (self.active if active else self.standby).setdefault(member_id, set()).add(task)
        self.held.add(task)
        self.counts[member_id] += 1
        return self.counts[member_id]

    def add_to_least_loaded(self, task: Task, active: bool) -> int:
        member_id = min(self.counts, key=lambda m: (self.counts[m], m))
        return self.add(member_id, task, active)


def _share(tasks: int, members: int) -> int:
    return -(-tasks // members) if members else 0


class _Quota:
    """A per-member ceiling, ``ceil(tasks left / members left)``: a member that reaches it is
    done, and the rest share what is left (Kafka's ``maybeUpdate...TasksPerMember``)."""

    def __init__(self, tasks: int, members: int) -> None:
        self.tasks = tasks
        self.members = members
        self.per_member = _share(tasks, members)

    def reached(self, count: int) -> None:
        if count == self.per_member:
            self.members -= 1
            self.tasks -= count
            self.per_member = _share(self.tasks, self.members)


class _Assignor:
    def __init__(
        self, members: Sequence[TaskMember], tasks: Mapping[str, int], stateful: Iterable[str], replicas: int
    ) -> None:
        self.replicas = replicas
        self.processes: dict[str, _Process] = {}
        self.process_of: dict[str, _Process] = {}
        for member in sorted(members, key=lambda m: m.member_id):
            process = self.processes.setdefault(member.process_id, _Process(member.process_id))
            process.counts[member.member_id] = 0
            self.process_of[member.member_id] = process
        self.active_tasks = [(sub, p) for sub in sorted(tasks) for p in range(tasks[sub])]
        stateful_subs = set(stateful)
        self.stateful_tasks = [task for task in self.active_tasks if task[0] in stateful_subs]
        total = len(self.active_tasks) + len(self.stateful_tasks) * replicas
        self.active_quota = _Quota(len(self.active_tasks), len(members))
        self.total_quota = _Quota(total, len(members))
        self.prev_active: dict[Task, str] = {}
        self.prev_standby: dict[Task, list[str]] = {}
        for member in sorted(members, key=lambda m: m.member_id):
            for task in _flatten(member.active):
                self.prev_active[task] = member.member_id
            for task in _flatten(member.standby):
                self.prev_standby.setdefault(task, []).append(member.member_id)

    # --- active tasks --------------------------------------------------------------------

    def assign_active(self) -> None:
        # Previous owners first, partition by partition (a range-like assignment stays one).
        pending = sorted(self.active_tasks, key=lambda t: (t[1], t[0]))
        pending = [t for t in pending if not self._give_back(t, self.prev_active.get(t))]
        pending = [t for t in pending if not self._give_back(t, self._least_loaded_prev(t, active=True))]
        # The rest by subtopology, so that a fresh assignment is range-like.
        heap = [(*process.order(), process) for process in self.processes.values()]
        heapq.heapify(heap)
        for task in sorted(pending, key=lambda t: (t[0], t[1])):
            _load, _id, process = heapq.heappop(heap)
            self._placed(process.add_to_least_loaded(task, active=True), active=True)
            heapq.heappush(heap, (*process.order(), process))

    def _give_back(self, task: Task, member_id: str | None) -> bool:
        if member_id is None:
            return False
        process = self.process_of[member_id]
        if process.counts[member_id] >= self.active_quota.per_member:
            return False
        self._placed(process.add(member_id, task, active=True), active=True)
        return True

    def _placed(self, count: int, active: bool) -> None:
        if active:
            self.active_quota.reached(count)
        self.total_quota.reached(count)

    def _least_loaded_prev(self, task: Task, active: bool) -> str | None:
        """Of the task's previous standby owners, the one of the least loaded process (and the
        least loaded within it), skipping processes that hold the task when placing a standby."""
        chosen: str | None = None
        for member_id in self.prev_standby.get(task, ()):
            process = self.process_of[member_id]
            if not active and task in process.held:
                continue
            if chosen is None:
                chosen = member_id
                continue
            best = self.process_of[chosen]
            if process.load < best.load and process.counts[member_id] < best.counts[chosen]:
                chosen = member_id
        return chosen

    # --- standby tasks -------------------------------------------------------------------

    def assign_standby(self) -> None:
        leftovers: list[tuple[Task, int]] = []
        for task in sorted(self.stateful_tasks, key=lambda t: (t[1], t[0]), reverse=True):
            for copy in range(self.replicas):
                if not self._standby_on_prev(task):
                    leftovers.append((task, self.replicas - copy))
                    break
        for task, copies in sorted(leftovers, key=lambda item: item[0], reverse=True):
            for copy in range(copies):
                if not self._standby_on_least_loaded(task):
                    log.warning(
                        "Unable to assign %d of %d standby tasks for task %s_%d: not enough processes.",
                        copies - copy,
                        self.replicas,
                        *task,
                    )
                    break

    def _standby_on_prev(self, task: Task) -> bool:
        for member_id in (self.prev_active.get(task), self._least_loaded_prev(task, active=False)):
            if member_id is None:
                continue
            process = self.process_of[member_id]
            if task not in process.held and process.counts[member_id] < self.total_quota.per_member:
                self._placed(process.add(member_id, task, active=False), active=False)
                return True
        return False

    def _standby_on_least_loaded(self, task: Task) -> bool:
        free = [p for p in self.processes.values() if task not in p.held]
        if not free:
            return False
        process = min(free, key=_Process.order)
        self._placed(process.add_to_least_loaded(task, active=False), active=False)
        return True

    def result(self) -> dict[str, TaskAssignment]:
        assignment = {}
        for member_id, process in self.process_of.items():
            assignment[member_id] = TaskAssignment(
                _grouped(process.active.get(member_id, ())), _grouped(process.standby.get(member_id, ()))
            )
        return assignment


def assign_tasks(
    members: Sequence[TaskMember], tasks: Mapping[str, int], stateful: Iterable[str], replicas: int
) -> dict[str, TaskAssignment]:
    """Every member's active and standby tasks: ``tasks`` gives each subtopology's task count,
    ``stateful`` the subtopologies with state (the only ones with standbys)."""
    if not members:
        return {}
    assignor = _Assignor(members, tasks, stateful, max(0, replicas))
    assignor.assign_active()
    if assignor.replicas:
        assignor.assign_standby()
    return assignor.result()


def _flatten(tasks: Tasks) -> Iterable[Task]:
    for sub, partitions in sorted(tasks.items()):
        for partition in sorted(partitions):
            yield sub, partition


def _grouped(tasks: Iterable[Task]) -> dict[str, frozenset[int]]:
    grouped: dict[str, set[int]] = {}
    for sub, partition in tasks:
        grouped.setdefault(sub, set()).add(partition)
    return {sub: frozenset(partitions) for sub, partitions in grouped.items()}
