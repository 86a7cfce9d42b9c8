"""Settings for every test suite of the repository (unit, compatibility and Spark tests).

``ODRADEK_STRICT_MESSAGES=1`` makes the generated encoders refuse message dicts with keys no
version of their API declares (``wire.codegen``), in this process and in every broker process
the tests start, which inherit the environment: a handler's misspelt field fails a test
instead of reaching a client as a default value.
"""

import os

os.environ.setdefault("ODRADEK_STRICT_MESSAGES", "1")

# Fixtures of external services every suite may use (etcd clusters for cluster mode).
pytest_plugins = ["compat_tests.kit.fixtures"]
