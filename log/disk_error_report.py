"""One wording for disk errors in the broker log: the errno's name and the file involved.

An operator reading "KAFKA_STORAGE_ERROR" needs to know *which* file system failed and *how*
(ENOSPC: free space; EIO: replace the disk; EROFS: remount), so every disk error the storage
engine logs goes through here.  Errors raised by descriptor-based calls (``pwrite``, ``fsync``)
carry no file name, so callers pass the path they were working on.
"""

from __future__ import annotations

import errno


def underlying_os_error(exc: BaseException | None) -> OSError | None:
    """``exc`` itself or the OSError it was raised from (engine errors wrap the original)."""
    while exc is not None and not isinstance(exc, OSError):
        exc = exc.__cause__
    return exc


def describe_os_error(exc: BaseException, path: str | None = None) -> str:
    """``"ENOSPC (errno 28): No space left on device, at /data/t-0/00000000000000000000.log"``.

    Falls back to ``str(exc)`` for failures that are not operating-system errors.
    """
    os_error = underlying_os_error(exc)
    if os_error is None or os_error.errno is None:
        return str(exc) if path is None else f"{exc}, at {path}"
    name = errno.errorcode.get(os_error.errno, "E?")
    where = os_error.filename if os_error.filename is not None else path
    text = f"{name} (errno {os_error.errno}): {os_error.strerror}"
    return text if where is None else f"{text}, at {where}"
