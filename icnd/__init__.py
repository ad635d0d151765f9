"""icnd: an information-centric computing network daemon.

The public façade: names, packets and the codec, the error hierarchy (loaded
with the package: the vocabulary every part of icnd speaks), and the client,
`function`, `Reduced`, the blocking `sync` façade and the asyncio `aio` one, loaded on first use
(PEP 562), so that ``import icnd`` -- and with it every ``import icnd.core...``
-- stays cheap: no trio, no numpy, no client until an application asks.

The API reference (``make docs``), module by module:

- `icnd.client` -- start here: `icnd.client.connect` and the `icnd.client.Client`
  it returns (fetch, publish, serve, call and host functions, objects,
  reductions, routing, status).
- `icnd.sync` -- the same client for blocking code (scripts, notebooks).
- `icnd.aio` -- the same client for asyncio programs.
- `icnd.compute.registry` -- `function`: named functions a node hosts.
- `icnd.reduction.consumer` -- groups, contributions and reductions
  (`Reduced`), as the client's `allreduce`, `contribute` and `reduce` use them.
- `icnd.trust` -- certificates, trust anchors and trust schemas.
- `icnd.security` -- signing keys and Data signatures.
- `icnd.topology` -- networks described in TOML: routes, launch, simulation.
- `icnd.name` -- names and their components.
- `icnd.packet` -- Interest, Data and Nack.
- `icnd.codec` -- the wire codec (`encode`, `decode`).
- `icnd.errors` -- the error hierarchy every part of icnd raises.
"""

from __future__ import annotations

from icnd.version import __version__

import importlib
from typing import TYPE_CHECKING, Any

from icnd.codec import decode, encode
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

if TYPE_CHECKING:
    from icnd import aio, sync
    from icnd.client import Client, connect
    from icnd.compute.registry import function
    from icnd.compute.named import Future, Ref
    from icnd.reduction.consumer import Reduced

# name -> the module it lives in (the module itself for `sync` and `aio`)
_LAZY = {
    "Client": "icnd.client",
    "connect": "icnd.client",
    "function": "icnd.compute.registry",
    "Reduced": "icnd.reduction.consumer",
    "Ref": "icnd.compute.named",
    "Future": "icnd.compute.named",
    "sync": "icnd.sync",
    "aio": "icnd.aio",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'icnd' has no attribute {name!r}")
    loaded = importlib.import_module(module)
    value = loaded if name in ("sync", "aio") else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Client",
    "connect",
    "function",
    "sync",
    "aio",
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
    "Ref",
    "Future",
    "RemoteError",
    "SigType",
    "Timeout",
    "Unauthorized",
    "VerificationError",
    "decode",
    "encode",
]
