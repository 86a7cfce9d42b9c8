"""Every API declaration, collected from the modules of this package.

Each module here declares one or more module-level :class:`~wire.schema.Api` values.  They
are gathered automatically so that adding an API means adding a module, without editing
a central list that several people would otherwise change at once.
"""

from __future__ import annotations

import importlib
import pkgutil

from wire.schema import Api


def _collect() -> dict[int, Api]:
    apis: dict[int, Api] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if not isinstance(value, Api):
                continue
            known = apis.get(value.key)
            if known is not None and known is not value:
                raise ImportError(f"API key {value.key} declared twice: {known.name} and {value.name}")
            apis[value.key] = value
    return dict(sorted(apis.items()))


ALL_APIS: dict[int, Api] = _collect()
"""By API key (an :class:`~wire.api_keys.ApiKey`, which is an int: a key read off the wire
looks its API up without converting it)."""
