"""Hosting the coordinators of ``coordinator/`` in the node: their partitions, timers, transaction markers and verification."""
