"""Settings for every test suite of the repository (unit, compatibility and Spark tests)."""

# Fixtures of external services every suite may use (etcd clusters for cluster mode).
pytest_plugins = ["compat_tests.kit.fixtures"]
