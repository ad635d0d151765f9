"""icnd: an information-centric computing network daemon.

The public façade: names, packets and the codec, the error hierarchy.
"""

__version__ = "0.1.0"

from icnd import sync  # noqa: E402
from icnd.client.door import Client, connect
from icnd.codec import decode, encode
from icnd.compute.registry import function
from icnd.errors import (
    DecodeError,
    Error,
    Nacked,
    NotFound,
    RemoteError,
    Timeout,
    Unauthorized,
    VerificationError,
)
from icnd.name import Component, Name
from icnd.packet import ContentType, Data, Interest, Nack, NackReason, SigType
from icnd.reduction.consumer import Reduced


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
