"""Upper bounds on partition counts, checked before anything is registered or created.

Every partition costs directories, files and descriptors, and creating them takes time; a
single hostile or mistyped count (a flipped bit turns 3 into 8,388,611) must not be able to
stall the broker or leave it with more partitions than it can open at the next start. Two
bounds apply to client requests (CreateTopics, CreatePartitions, auto-creation):

- ``max.partitions.per.request``: Kafka's controller refuses any request that would add more
  than 10,000 partitions with POLICY_VIOLATION ("Excessively large number of partitions per
  request"); Odradek makes that bound configurable.
- ``max.partitions.per.broker``: the total over all topics this broker may hold.

Both are Odradek-specific keys (Kafka hard-codes the first and has no second); both answer
POLICY_VIOLATION, with a message naming the limit and its key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.services.topic_admin import TopicError
from wire.error_codes import ErrorCode

if TYPE_CHECKING:
    from broker.config.config import BrokerConfig
    from broker.state.topic_registry import TopicRegistry

PER_REQUEST_KEY = "max.partitions.per.request"
PER_BROKER_KEY = "max.partitions.per.broker"


class PartitionBudget:
    """What one request may still add: made once per request, drawn from topic by topic.

    Constructing it checks the request's total against the per-request bound (as Kafka's
    controller does, before looking at any single topic). :meth:`reserve` checks each topic
    against what the broker holds at that moment, so that requests whose creations interleave
    (creation awaits a worker thread) cannot overshoot together. The caller registers what it
    reserved before its next ``await``, so the registry counts it from then on; a validate-only
    request registers nothing, so the budget itself remembers what it let through.
    """

    def __init__(
        self, config: BrokerConfig, topics: TopicRegistry, requested: int, validate_only: bool = False
    ) -> None:
        per_request = config.get_int(PER_REQUEST_KEY)
        if requested > per_request:
            raise TopicError(
                ErrorCode.POLICY_VIOLATION,
                f"Excessively large number of partitions per request: {requested} requested, "
                f"at most {per_request} allowed ({PER_REQUEST_KEY}).",
            )
        self._topics = topics
        self._limit = config.get_int(PER_BROKER_KEY)
        self._validate_only = validate_only
        self._validated = 0  # partitions let through but, validate-only, never registered

    def reserve(self, count: int) -> None:
        """Account for ``count`` new partitions, or raise POLICY_VIOLATION if they do not fit."""
        # Every registered topic counts, internal ones too (they use files as well).
        used = self._topics.partition_count + self._validated
        if used + count > self._limit:
            raise TopicError(
                ErrorCode.POLICY_VIOLATION,
                f"Adding {count} partitions would exceed the broker's limit of {self._limit} "
                f"partitions ({PER_BROKER_KEY}); it holds {used}.",
            )
        if self._validate_only:
            self._validated += count
