"""A FunctionHost driven directly (no daemon): hand-made Interests in, answers out (D5, D6)."""

from __future__ import annotations

import hashlib

import msgpack
import trio

from icnd import Name
from icnd.compute.caller import Caller
from icnd.compute.host import FunctionHost, HostLimits
from icnd.compute.registry import HostedFunction
from icnd.compute.values import encode_value
from icnd.errors import Nacked
from icnd.name import T_PARAMS
from icnd.packet import Data, Interest, Nack
from icnd.security import Ed25519Key, KeyChain


class HostEndpoint:
    """What a FunctionHost needs of its client to sign its answers."""

    def __init__(self) -> None:
        self.key = Ed25519Key.generate(Name("/node/h"))
        self.keychain = KeyChain()
        self.keychain.add_signing_key(self.key)

    def sign(self, data: Data) -> Data:
        return self.key.sign(data)


class CallerEndpoint:
    """A caller's endpoint whose Interests reach `host` directly (small and pure calls only)."""

    def __init__(self, host: FunctionHost, keychain: KeyChain, key: Ed25519Key | None = None) -> None:
        self.host, self.keychain, self.key = host, keychain, key

    async def verify(self, data: Data) -> None:
        self.keychain.verify(data)

    def passes_fds(self) -> bool:  # not a local Unix connection: no shared memory
        return False

    async def express(self, interest: Interest, *, timeout: float, retx: float | None = None) -> Data:
        answer = await self.host._on_call(interest)
        if isinstance(answer, Nack):
            raise Nacked(answer.reason.name.lower().replace("_", "-"), str(interest.name))
        assert answer is not None
        return answer


def make_host(nursery: trio.Nursery, functions: list[HostedFunction], **limits) -> tuple[FunctionHost, HostEndpoint]:
    ep = HostEndpoint()
    host = FunctionHost(ep, functions, Name("/node/h"), limits=HostLimits(**limits))  # type: ignore[arg-type]
    host._nursery = nursery
    return host, ep


def caller(host: FunctionHost, ep: HostEndpoint, identity: str | None = None) -> Caller:
    key = None if identity is None else Ed25519Key.generate(Name(identity))
    return Caller(CallerEndpoint(host, ep.keychain, key))  # type: ignore[arg-type]


def pure_interest(fn: str, *args: object) -> Interest:
    """A hand-made, unsigned ``/fn/NAME/params-sha256=...`` call."""
    interest = Interest.with_params(Name(fn), msgpack.packb([encode_value(a) for a in args], use_bin_type=True))
    assert interest.name.comps[-1][0] == T_PARAMS
    return interest


def digest(blob: bytes) -> bytes:
    return hashlib.sha256(blob).digest()
