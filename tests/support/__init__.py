"""Helpers shared by tests, compat_tests and bench: external services the tests start themselves."""
