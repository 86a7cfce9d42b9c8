"""Cluster mode: brokers that share their metadata through etcd (see docs/CLUSTER.md).

Nothing here is imported by a single broker (`odradek serve` without `--cluster`).
"""
