"""The classic group protocol: JoinGroup, SyncGroup, Heartbeat and LeaveGroup, as Kafka runs it.

This is a port of the rules of Kafka's group coordinator (``GroupMetadataManager``'s classic
group part), kept sans-IO: time comes from an injected clock, deadlines are entries in a
:class:`~coordinator.timer.Timer`, persistence goes through a writer callable, and parked
JoinGroup/SyncGroup requests are completed by calling their responders.

The life of a generation: members send JoinGroup and are parked; once all known members have
rejoined (or the rebalance timeout expires, dropping the ones that did not) the generation
is bumped, a protocol is chosen and every parked JoinGroup is answered, the leader's with the
member list.  Members then send SyncGroup; the leader's carries the assignment, which is
persisted and handed to everyone.  Heartbeats keep sessions alive and tell members about the
next rebalance.  A brand-new group waits ``group.initial.rebalance.delay.ms`` (extended while
members keep arriving, up to the rebalance timeout) so that a fleet of consumers starting
together lands in one generation instead of many.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coordinator.classic_group import (
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    ClassicMember,
    GroupError,
    GroupState,
    JoinResponder,
    Protocols,
    SyncResponder,
    join_error,
    sync_error,
)
from coordinator.group_protocol import GroupProtocol
from coordinator.records import GroupMetadataKey, MemberIdentity, Record, encode_group_metadata
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from wire.messages import (
        JoinGroupResponse,
        JoinGroupResponseMembers,
        LeaveGroupResponseMembers,
        SyncGroupResponse,
    )

log = logging.getLogger(__name__)

# Appends records to the group's ``__consumer_offsets`` partition; returns the error to
# answer with if that failed.
GroupWriter = Callable[[str, list[Record]], ErrorCode]

PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
EMPTY = GroupState.EMPTY
DEAD = GroupState.DEAD


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A JoinGroup request, version-normalized by the handler.

    ``identity`` is what the member says about itself; its ``member_id`` is
    :data:`UNKNOWN_MEMBER_ID` until the coordinator has handed it one.
    """

    group_id: str
    identity: MemberIdentity
    protocol_type: str
    protocols: Protocols
    api_version: int

    @property
    def requires_known_member_id(self) -> bool:
        """v4+ clients accept MEMBER_ID_REQUIRED and rejoin with the id it carries (KIP-394)."""
        return self.api_version >= 4

    @property
    def supports_skip_assignment(self) -> bool:
        return self.api_version >= 9


@dataclass(frozen=True, slots=True)
class SyncRequest:
    """A SyncGroup request, version-normalized by the handler."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict[str, bytes]
    api_version: int


def group_metadata_record(group: ClassicGroup, assignment: dict[str, bytes]) -> Record:
    return encode_group_metadata(GroupMetadataKey(group.group_id), group.to_metadata(assignment))


@dataclass(eq=False)
class ClassicGroups(GroupProtocol[ClassicGroup]):
    """Runs the classic protocol over the coordinator's groups, persisting them with ``_write``."""

    kind = ClassicGroup
    _write: GroupWriter

    # --- lookup --------------------------------------------------------------------------

    def create_group(self, group_id: str) -> ClassicGroup:
        """Create an Empty group and persist it, so that it survives a restart."""
        group = ClassicGroup(group_id, EMPTY, self._clock())
        self._groups[group_id] = group
        self._write(group_id, [group_metadata_record(group, {})])
        return group

    # --- JoinGroup -----------------------------------------------------------------------

    def join(self, request: JoinRequest, respond: JoinResponder) -> None:
        group = self.group(request.group_id)
        if group is None:
            if request.identity.member_id != UNKNOWN_MEMBER_ID:
                # A member id for a group that does not exist: the client must start over.
                respond(join_error(ErrorCode.UNKNOWN_MEMBER_ID, request.identity.member_id))
                return
            group = self.create_group(request.group_id)
        if not self._accepts_joining_member(group, request.identity.member_id):
            self._remove_member(group, request.identity.member_id)
            respond(join_error(ErrorCode.GROUP_MAX_SIZE_REACHED))
        elif request.identity.member_id == UNKNOWN_MEMBER_ID:
            self._join_new_member(group, request, respond)
        else:
            self._join_existing_member(group, request, respond)

    def _accepts_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        limit = self._config.group_max_size
        member = group.members.get(member_id)
        if group.is_in(EMPTY, DEAD):
            return True
        if group.is_in(PREPARING):
            # Counting parked joins (not members) lets the last members to rejoin be the
            # ones turned away when the group is over a (possibly lowered) limit.
            return (member is not None and member.awaiting_join) or group.awaiting_join_count() < limit
        return member is not None or len(group.members) < limit

    def _join_new_member(self, group: ClassicGroup, request: JoinRequest, respond: JoinResponder) -> None:
        if group.is_in(DEAD):
            respond(join_error(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(request.protocol_type, {name for name, _ in request.protocols}):
            respond(join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        member_id = group.generate_member_id(request.identity.client_id, request.identity.group_instance_id)
        if request.identity.group_instance_id is not None:
            existing = group.static_members.get(request.identity.group_instance_id)
            if existing is not None:
                self._replace_static_member(group, request, existing, member_id, respond)
            else:
                self._add_member_and_rebalance(group, request, member_id, respond)
        elif request.requires_known_member_id:
            # Hand out the id first and park nothing: the coordinator never waits on a member
            # it could not recognise if the client retried (KIP-394).
            group.pending_join_members.add(member_id)
            self._schedule_heartbeat_expiry(group.group_id, member_id, request.identity.session_timeout_ms)
            respond(join_error(ErrorCode.MEMBER_ID_REQUIRED, member_id))
        else:
            self._add_member_and_rebalance(group, request, member_id, respond)

    def _join_existing_member(
        self, group: ClassicGroup, request: JoinRequest, respond: JoinResponder
    ) -> None:
        member_id = request.identity.member_id
        if group.is_in(DEAD):
            respond(join_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(request.protocol_type, {name for name, _ in request.protocols}):
            respond(join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_join_members:
            if request.identity.group_instance_id is not None:
                # Only dynamic members are ever pending; Kafka treats this as a server error.
                respond(join_error(ErrorCode.UNKNOWN_SERVER_ERROR, member_id))
                return
            self._add_member_and_rebalance(group, request, member_id, respond)
            return
        try:
            member = group.validate_member(member_id, request.identity.group_instance_id)
        except GroupError as error:
            respond(join_error(error.code, member_id))
            return
        if group.is_in(PREPARING):
            self._update_member_and_rebalance(group, member, request, respond)
        elif group.is_in(COMPLETING):
            if member.matches(request.protocols):
                # The member missed its JoinGroup response: repeat it.
                members = group.join_members() if group.is_leader(member_id) else []
                respond(self._join_response(group, member_id, members))
            else:
                self._update_member_and_rebalance(group, member, request, respond)
        elif group.is_in(STABLE):
            if group.is_leader(member_id) or not member.matches(request.protocols):
                # A rejoining leader asks for a new assignment (e.g. topic metadata changed).
                self._update_member_and_rebalance(group, member, request, respond)
            else:
                respond(self._join_response(group, member_id, []))
        else:
            respond(join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _join_response(
        self,
        group: ClassicGroup,
        member_id: str,
        members: list[JoinGroupResponseMembers],
        skip_assignment: bool = False,
    ) -> JoinGroupResponse:
        return {
            "error_code": ErrorCode.NONE,
            "generation_id": group.generation_id,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "leader": group.leader_id or "",
            "skip_assignment": skip_assignment,
            "member_id": member_id,
            "members": members,
        }

    def _add_member_and_rebalance(
        self, group: ClassicGroup, request: JoinRequest, member_id: str, respond: JoinResponder
    ) -> None:
        member = ClassicMember(
            identity=dataclasses.replace(request.identity, member_id=member_id),
            protocol_type=request.protocol_type,
            protocols=list(request.protocols),
            is_new=True,
        )
        if group.is_in(PREPARING) and group.previous_state is EMPTY:
            group.new_member_added = True
        group.add(member, respond)
        # A parked new member cannot heartbeat and a disconnect goes unnoticed while its
        # request is parked; bound how long such a member can hold up the rebalance.
        self._schedule_heartbeat_expiry(
            group.group_id, member_id, self._config.group_new_member_join_timeout_ms
        )
        log.info("group %s: member %s joins (%s)", group.group_id, member_id, group.state.value)
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _update_member_and_rebalance(
        self, group: ClassicGroup, member: ClassicMember, request: JoinRequest, respond: JoinResponder
    ) -> None:
        group.update_member(member, request.protocols, request.identity, respond)
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _replace_static_member(
        self,
        group: ClassicGroup,
        request: JoinRequest,
        old_member_id: str,
        new_member_id: str,
        respond: JoinResponder,
    ) -> None:
        """A static member rejoined without its member id (typically after a restart)."""
        previous_leader = group.leader_id
        self._timer.cancel(("heartbeat", group.group_id, old_member_id))
        member = group.replace_static_member(
            request.identity.group_instance_id or "", old_member_id, new_member_id
        )
        self._reschedule_heartbeat(group, member)
        group.update_member(member, request.protocols, request.identity, respond)
        log.info(
            "group %s: static member %s is now %s",
            group.group_id,
            request.identity.group_instance_id,
            new_member_id,
        )
        if group.is_in(STABLE):
            if group.protocol_name != group.select_protocol():
                self._maybe_prepare_rebalance_or_complete_join(group)
                return
            # Same protocol: no rebalance, the member gets its old assignment back through
            # SyncGroup.  This is the point of static membership (KIP-345).
            assignment = {m.identity.member_id: m.assignment for m in group.members.values()}
            error = self._write(group.group_id, [group_metadata_record(group, assignment)])
            if error is not ErrorCode.NONE:
                member.complete_join(join_error(error))
            elif request.supports_skip_assignment:
                is_leader = group.is_leader(new_member_id)
                members = group.join_members() if is_leader else []
                member.complete_join(
                    self._join_response(group, new_member_id, members, skip_assignment=is_leader)
                )
            else:
                response = self._join_response(group, new_member_id, [])
                response["leader"] = previous_leader or ""
                member.complete_join(response)
        elif group.is_in(COMPLETING):
            # The leader may already be computing an assignment for the old member id.
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join_phase(group)

    # --- rebalancing ---------------------------------------------------------------------

    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join_phase(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if (
            group.is_in(PREPARING)
            and group.previous_state is not EMPTY  # the initial rebalance waits for its delay
            and group.has_all_members_joined()
        ):
            self._complete_join(group)

    def _prepare_rebalance(self, group: ClassicGroup) -> None:
        if group.is_in(COMPLETING):
            self._reset_and_propagate_assignment(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        now = self._clock()
        initial = group.is_in(EMPTY)
        if initial:
            delay = self._config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_rebalance(group.group_id, delay, remaining)
        group.transition_to(PREPARING, now)
        log.info("group %s: preparing rebalance (generation %d)", group.group_id, group.generation_id)
        if not initial:
            if group.has_all_members_joined():
                self._complete_join(group)
            else:
                self._schedule_join_completion(group)

    def _schedule_initial_rebalance(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        self._timer.schedule(
            ("join", group_id),
            self._clock() + delay_ms,
            lambda: self._complete_initial_rebalance(group_id, delay_ms, remaining_ms),
        )

    def _complete_initial_rebalance(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        group = self.group(group_id)
        if group is None or not group.is_in(PREPARING):
            return
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self._config.group_initial_rebalance_delay_ms, remaining_ms)
            self._schedule_initial_rebalance(group_id, new_delay, max(remaining_ms - delay_ms, 0))
        else:
            self._complete_join(group)

    def _schedule_join_completion(self, group: ClassicGroup) -> None:
        group_id = group.group_id
        self._timer.schedule(
            ("join", group_id),
            self._clock() + group.rebalance_timeout_ms(),
            lambda: self._complete_join_by_id(group_id),
        )

    def _complete_join_by_id(self, group_id: str) -> None:
        group = self.group(group_id)
        if group is not None and group.is_in(PREPARING):
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        """End the join phase: drop dynamic members that did not rejoin, start a generation."""
        self._timer.cancel(("join", group.group_id))
        for member in [
            m for m in group.members.values() if not m.awaiting_join and m.identity.group_instance_id is None
        ]:
            log.info("group %s: member %s did not rejoin in time", group.group_id, member.identity.member_id)
            self._remove_member(group, member.identity.member_id)
        if group.is_in(DEAD):
            return
        if not group.elect_joined_leader() and group.members:
            # Only static members that have not rejoined are left: wait another round for
            # them or for their session timeouts.
            self._schedule_join_completion(group)
            return
        group.init_next_generation(self._clock())
        if group.is_in(EMPTY):
            log.info("group %s: generation %d is empty", group.group_id, group.generation_id)
            self._write(group.group_id, [group_metadata_record(group, {})])
            return
        log.info(
            "group %s: generation %d with %d members (protocol %s)",
            group.group_id,
            group.generation_id,
            len(group.members),
            group.protocol_name,
        )
        for member in list(group.members.values()):
            members = group.join_members() if group.is_leader(member.identity.member_id) else []
            member.complete_join(self._join_response(group, member.identity.member_id, members))
            self._reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.identity.member_id)
        generation = group.generation_id
        group_id = group.group_id
        self._timer.schedule(
            ("sync", group_id),
            self._clock() + group.rebalance_timeout_ms(),
            lambda: self._expire_pending_sync(group_id, generation),
        )

    def _expire_pending_sync(self, group_id: str, generation: int) -> None:
        """Members that got their JoinGroup response but never sent SyncGroup are dropped."""
        group = self.group(group_id)
        if group is None or group.generation_id != generation or not group.is_in(COMPLETING, STABLE):
            return
        if group.pending_sync_members:
            for member_id in list(group.pending_sync_members):
                log.info("group %s: member %s did not sync in time", group_id, member_id)
                self._remove_member(group, member_id)
            self._prepare_rebalance(group)

    def _remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self._timer.cancel(("sync", group.group_id))

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.is_in(COMPLETING, STABLE) or not group.pending_sync_members:
            self._timer.cancel(("sync", group.group_id))

    def _reset_and_propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        for member in group.members.values():
            if member.complete_sync(_sync_response(group, member, error)):
                # Sessions restart once the assignment is out: a session that expired while
                # the member waited for the leader must not count against it.
                self._reschedule_heartbeat(group, member)

    # --- SyncGroup -----------------------------------------------------------------------

    def sync(self, request: SyncRequest, respond: SyncResponder) -> None:
        if request.api_version >= 5 and (request.protocol_type is None or request.protocol_name is None):
            # From v5 on both are mandatory (Kafka checks this before looking at the group).
            respond(sync_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        group = self.group(request.group_id)
        if group is None or group.is_empty:
            respond(sync_error(ErrorCode.UNKNOWN_MEMBER_ID))
            return
        error = self._validate_sync(group, request)
        if error is not ErrorCode.NONE:
            respond(sync_error(error))
        elif group.is_in(PREPARING):
            respond(sync_error(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.is_in(COMPLETING):
            member = group.members[request.member_id]
            member.park_sync(respond)
            self._remove_pending_sync_member(group, request.member_id)
            if group.is_leader(request.member_id):
                self._install_assignment(group, request.assignments)
        else:  # Stable: the member missed its SyncGroup response; repeat it.
            self._remove_pending_sync_member(group, request.member_id)
            respond(_sync_response(group, group.members[request.member_id], ErrorCode.NONE))

    def _validate_sync(self, group: ClassicGroup, request: SyncRequest) -> ErrorCode:
        if group.is_in(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(request.member_id, request.group_instance_id)
        except GroupError as error:
            return error.code
        if request.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if _inconsistent(request.protocol_type, group.protocol_type) or _inconsistent(
            request.protocol_name, group.protocol_name
        ):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return ErrorCode.NONE

    def _install_assignment(self, group: ClassicGroup, assignments: dict[str, bytes]) -> None:
        """Persist the leader's assignment, then answer every parked SyncGroup."""
        assignment = {member_id: assignments.get(member_id, b"") for member_id in group.members}
        error = self._write(group.group_id, [group_metadata_record(group, assignment)])
        if error is not ErrorCode.NONE:
            self._reset_and_propagate_assignment(group, error)
            self._maybe_prepare_rebalance_or_complete_join(group)
            return
        for member in group.members.values():
            member.assignment = assignment[member.identity.member_id]
        self._propagate_assignment(group, ErrorCode.NONE)
        group.transition_to(STABLE, self._clock())
        log.info("group %s: generation %d is stable", group.group_id, group.generation_id)

    # --- Heartbeat -----------------------------------------------------------------------

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        group = self.group(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_in(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        try:
            member = group.validate_member(member_id, group_instance_id)
        except GroupError as error:
            return error.code
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_in(EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._reschedule_heartbeat(group, member)
        if group.is_in(PREPARING):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def reschedule_heartbeat(self, group: ClassicGroup, member_id: str) -> None:
        """An OffsetCommit from a member of a Stable/PreparingRebalance group keeps its session."""
        member = group.members.get(member_id)
        if member is not None:
            self._reschedule_heartbeat(group, member)

    def _reschedule_heartbeat(self, group: ClassicGroup, member: ClassicMember) -> None:
        self._schedule_heartbeat_expiry(
            group.group_id, member.identity.member_id, member.identity.session_timeout_ms
        )

    def _schedule_heartbeat_expiry(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        self._timer.schedule(
            ("heartbeat", group_id, member_id),
            self._clock() + timeout_ms,
            lambda: self._expire_heartbeat(group_id, member_id),
        )

    def _expire_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self.group(group_id)
        if group is None or group.is_in(DEAD):
            return
        if member_id in group.pending_join_members:
            log.info("group %s: pending member %s expired", group_id, member_id)
            group.remove(member_id)
            if group.is_in(PREPARING) and group.has_all_members_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        log.info("group %s: member %s session expired", group_id, member_id)
        self._remove_member(group, member_id)
        if group.is_in(STABLE, COMPLETING):
            self._maybe_prepare_rebalance_or_complete_join(group)
        elif group.is_in(PREPARING) and group.has_all_members_joined():
            self._complete_join(group)

    def _remove_member(self, group: ClassicGroup, member_id: str) -> None:
        """Drop a member, answering whatever it still has parked with UNKNOWN_MEMBER_ID.

        Kafka answers the parked JoinGroup so a live client retries; the parked SyncGroup is
        answered too because here a waiter would otherwise hold its connection forever.
        """
        self._timer.cancel(("heartbeat", group.group_id, member_id))
        member = group.remove(member_id)
        if member is not None:
            member.complete_join(join_error(ErrorCode.UNKNOWN_MEMBER_ID))
            member.complete_sync(sync_error(ErrorCode.UNKNOWN_MEMBER_ID))

    # --- LeaveGroup ----------------------------------------------------------------------

    def leave(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[LeaveGroupResponseMembers]]:
        """Remove members (member id, group instance id); returns (group error, per-member)."""
        group = self.group(group_id)
        if group is None:
            return ErrorCode.NONE, [_leave_result(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in leaving]
        if group.is_in(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        results: list[LeaveGroupResponseMembers] = []
        removed = False
        for member_id, instance_id in leaving:
            code = self._leave_one(group, member_id, instance_id)
            removed |= code is ErrorCode.NONE
            results.append(_leave_result(member_id, instance_id, code))
        if removed:
            if group.is_in(STABLE, COMPLETING):
                self._maybe_prepare_rebalance_or_complete_join(group)
            elif group.is_in(PREPARING):
                self._maybe_complete_join_phase(group)
        return ErrorCode.NONE, results

    def _leave_one(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> ErrorCode:
        if member_id == UNKNOWN_MEMBER_ID:
            # Admin tools remove static members by instance id alone.
            static_id = group.static_members.get(instance_id) if instance_id is not None else None
            if static_id is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            self._remove_member(group, static_id)
        elif member_id in group.pending_join_members:
            self._timer.cancel(("heartbeat", group.group_id, member_id))
            group.remove(member_id)
        else:
            try:
                group.validate_member(member_id, instance_id)
            except GroupError as error:
                return error.code
            self._remove_member(group, member_id)
        log.info("group %s: member %s left", group.group_id, member_id or instance_id)
        return ErrorCode.NONE

    # --- loading and deletion ------------------------------------------------------------

    def on_loaded(self, group: ClassicGroup) -> None:
        """After replay, members must heartbeat again within their session timeouts."""
        for member in group.members.values():
            self._reschedule_heartbeat(group, member)
        if len(group.members) > self._config.group_max_size:
            self._prepare_rebalance(group)

    def forget(self, group: ClassicGroup) -> None:
        """The group was deleted: mark it Dead and release its timers and parked requests."""
        for member_id in list(group.members):
            self._remove_member(group, member_id)
        self._timer.cancel(("join", group.group_id))
        self._timer.cancel(("sync", group.group_id))
        group.transition_to(DEAD, self._clock())


def _sync_response(group: ClassicGroup, member: ClassicMember, error: ErrorCode) -> SyncGroupResponse:
    """The member's SyncGroup answer; with an error Kafka leaves the protocol out."""
    ok = error is ErrorCode.NONE
    return {
        "error_code": error,
        "protocol_type": group.protocol_type if ok else None,
        "protocol_name": group.protocol_name if ok else None,
        "assignment": member.assignment,
    }


def _inconsistent(requested: str | None, actual: str | None) -> bool:
    return requested is not None and actual is not None and requested != actual


def _leave_result(member_id: str, instance_id: str | None, code: ErrorCode) -> LeaveGroupResponseMembers:
    return {"member_id": member_id, "group_instance_id": instance_id, "error_code": code}
