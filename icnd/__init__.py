"""icnd: an information-centric computing network daemon.

The public façade: names, packets and the codec, the error hierarchy.
"""

__version__ = "0.1.0"

from . import sync  # noqa: E402
from .client import Client, connect
from .codec import decode, encode
from .compute.registry import function
from .errors import (
    DecodeError,
    Error,
    Nacked,
    NotFound,
    RemoteError,
    Timeout,
    Unauthorized,
    VerificationError,
)
from .name import Component, Name
from .packet import ContentType, Data, Interest, Nack, NackReason, SigType
from .reduction.consumer import Reduced


__all__ = [
    "Client",
    "connect",
    "function",
    "sync",
    "Component",
    "ContentType",
    "Data",
    "DecodeError",
    "Error",
    "Interest",
    "Nack",
    "NackReason",
    "Nacked",
    "Name",
    "NotFound",
    "Reduced",
    "RemoteError",
    "SigType",
    "Timeout",
    "Unauthorized",
    "VerificationError",
    "decode",
    "encode",
]
