"""Streams groups (KIP-1071): the topology a Streams application sends and the group that assigns its tasks."""
