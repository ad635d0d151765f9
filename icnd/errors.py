"""The one error hierarchy.

`DecodeError` means a peer sent something malformed (remote fault); the
others are raised to applications by the client library.  Every message says
what failed, where and why.
"""

from __future__ import annotations


class Error(Exception):
    """Base class of every error icnd raises on purpose."""


class DecodeError(Error):
    """Bytes from the network are not a valid icnd packet."""


class Timeout(Error):
    """No answer before the deadline."""


class Nacked(Error):
    """The network refused the Interest; `reason` is the Nack reason label."""

    def __init__(self, reason: str, message: str = "") -> None:
        self.reason = reason
        super().__init__(message or f"nacked: {reason}")


class NotFound(Error):
    """The name exists nowhere the network could reach."""


class VerificationError(Error):
    """A signature or digest did not verify."""


class RemoteError(Error):
    """The remote side (a function, a producer) answered with an error."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class Unauthorized(Error):
    """The remote side refused this principal."""
