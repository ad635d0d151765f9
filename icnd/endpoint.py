"""What an application's features need from its connection to a node.

Callers and hosts of named functions (`icnd.compute`), object fetchers and
publishers (`icnd.objects.fetch`) and reduction consumers
(`icnd.reduction.consumer`) are written against `Endpoint`, not against the
client: `icnd.Client` implements it (a local face of the node plus the
matching of answers to Interests) and is a thin door that hands itself to
them.  So the features sit below the client and never import it; a test
may hand them any object with these methods.

The socket a node listens on for its local applications, and that clients
connect to, is resolved here too (`resolve_socket_path`), the one rule both
sides follow.
"""

from __future__ import annotations

import os
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, Awaitable, Callable, Protocol, Sequence, Union

from icnd.name import Name, NameLike
from icnd.packet import Data, Interest, Nack, Packet
from icnd.security import SigningKey

DEFAULT_TIMEOUT = 4.0  # seconds an Interest is retried before `express` gives up
RETX_INTERVAL = 1.0  # retransmit with a fresh nonce while the deadline allows

Answer = Union[bytes, Data, Nack, None]
# answers Interests under a served prefix: bytes (wrapped in a Data signed by
# the endpoint), a Data, a Nack or None (no answer); may be a coroutine function
Handler = Callable[[Interest], Union[Answer, Awaitable[Answer]]]
OnPacket = Callable[[Union[Data, Nack]], None]


class Endpoint(Protocol):
    """An application's end of its connection to a node."""

    key: SigningKey | None  # the application's own identity, if it has one

    def send(self, packet: Packet) -> None:
        """Hand `packet` to the node now (never blocks)."""

    async def express(self, interest: Interest, *, timeout: float = DEFAULT_TIMEOUT,
                      retx: float | None = RETX_INTERVAL) -> Data:
        """Send `interest` (retransmitted every `retx` seconds with a fresh
        nonce) until Data; raises `Nacked` or, at the deadline, `Timeout`."""

    async def verify(self, data: Data, *, timeout: float = DEFAULT_TIMEOUT, vouched: bool = False) -> None:
        """Accept `data` or raise `VerificationError` (`icnd.Client` asks its
        `icnd.trust.validator.Validator`).  ``vouched=True``: the caller
        already trusts this exact Data's digest (the Interest named its
        implicit digest); only then may a DigestSha256 Data pass.  Callers
        pass `vouched` only when true, so an endpoint without the parameter
        still works where nothing is vouched for."""

    async def fetch_key(self, key_name: Name, *, timeout: float = DEFAULT_TIMEOUT) -> Data:
        """The certificate (or bare key Data) named by `key_name`: an Interest
        with CanBePrefix; concurrent asks for one key share one fetch.  The
        one way certificates are fetched, for every validator."""

    def sign(self, data: Data) -> Data:
        """`data` signed by the application's key (a digest if it has none)."""

    async def command(self, module: str, verb: str, *, timeout: float = 10.0, fds: Sequence[int] = (),
                      **args: Any) -> Any:
        """Run a management command on the node; raises `CommandError` if
        refused.  `fds`: descriptors passed alongside (a local Unix
        connection only), e.g. a sealed shared-memory segment."""

    def passes_fds(self) -> bool:
        """True if `command` can pass descriptors (a local Unix connection)."""

    async def command_fd(self, module: str, verb: str, *, timeout: float = 10.0, **args: Any) -> tuple[Any, int]:
        """`command` whose reply carries one descriptor: (result, descriptor,
        which the caller owns and must close)."""

    async def node_name(self) -> Name:
        """The name of the node this endpoint is attached to."""

    def serve(self, prefix: NameLike, handler: Handler, *, cost: int = 0) -> AbstractAsyncContextManager[None]:
        """Answer Interests under `prefix` with `handler` while the block runs."""

    def reflexive(self, component: bytes, handler: Handler) -> AbstractContextManager[None]:
        """Answer reflexive Interests starting with `component` (an rnp=) meanwhile."""

    def stream(self, prefix: Name, on_packet: OnPacket) -> AbstractContextManager[None]:
        """Hand every Data and Nack named `prefix` plus one component to
        `on_packet` meanwhile, instead of to waiting `express` calls (a
        pipeline of Interests sent with `send`)."""


def resolve_socket_path(explicit: str | None = None) -> str:
    """--socket, else $ICND_SOCKET, else $XDG_RUNTIME_DIR/icnd.sock, else /tmp/icnd-$UID.sock."""
    if explicit:
        return explicit
    env = os.environ.get("ICND_SOCKET")
    if env:
        return env
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "icnd.sock")
    return f"/tmp/icnd-{os.getuid()}.sock"
