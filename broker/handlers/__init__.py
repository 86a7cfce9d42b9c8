"""The request handlers: one module per API family, each with a ``HANDLERS`` table.

Handlers are thin: they check a request, ask the services (``broker.services``) and shape the
answer. A handler module imports nothing of another handler module (an import-linter contract,
``.importlinter``): what two APIs share lives in ``broker.requests`` or in a service.
"""

from __future__ import annotations

import importlib
import pkgutil

from broker.requests.api_support import Served
from wire.api_keys import ApiKey


def load_handlers() -> dict[ApiKey, Served]:
    """Collect ``HANDLERS`` from every module of this package (the node installs the table)."""
    found: dict[ApiKey, Served] = {}
    for module_info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for key, served in getattr(module, "HANDLERS", {}).items():
            if key in found:
                raise RuntimeError(f"two handlers for {key.api_name}: {module_info.name} and another module")
            found[key] = served
    return found
