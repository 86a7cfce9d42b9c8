"""Exceptions raised by the sans-IO codec.

The broker must tell "the peer sent garbage" (close the connection or answer with an error)
apart from bugs in its own code, so every malformed input surfaces as :class:`DecodeError`
and every unencodable value as :class:`EncodeError`, never as ``struct.error``,
``IndexError`` or ``UnicodeDecodeError``.
"""


class WireError(Exception):
    """Base class of every error the ``wire`` package raises on purpose."""


class DecodeError(WireError):
    """The input bytes are not a valid encoding of the expected message."""


class EncodeError(WireError):
    """A message value cannot be encoded (wrong type, out of range, null where not allowed)."""


class UnsupportedVersion(WireError):
    """No schema exists for this API key, or the version is outside its declared range."""
