"""Odradek's benchmarks: the same client load against Odradek and reference brokers.

Design decision 5 says every optimisation is measured here side by side, so the harness is
generic: ``launchers`` starts any broker kind, ``compat_tests.kit.procstat`` reads its CPU and memory,
``load`` is the client process, and each benchmark (``throughput``) composes them.
"""
