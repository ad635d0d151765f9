"""A host checks a call's argument manifest before any bulk pull; the ERROR it
answers names the kind of refusal by code, not by reading its own message."""

from __future__ import annotations

import msgpack
import pytest

from icnd.compute.host import ArgumentsRefused, FunctionHost, HostLimits
from icnd.compute.rice import MAX_ARGS
from icnd.name import Name
from icnd.packet import Data
from icnd.security import Ed25519Key, KeyChain

SEGMENT = 8192


class _HostClient:
    def __init__(self) -> None:
        self.key = Ed25519Key.generate(Name("/node/h"))
        self.keychain = KeyChain()


def _host(**limits: int) -> FunctionHost:
    client = _HostClient()  # not an Endpoint: only its key and keychain are read here
    return FunctionHost(client, [], Name("/node/h"), limits=HostLimits(**limits))  # type: ignore[arg-type]  # a fake


def _manifest(sizes: list[int], segment_size: int = SEGMENT) -> Data:
    args = [{"size": size, "digests": bytes(32 * max(1, -(-size // segment_size)))} for size in sizes]
    return Data(Name("/m"), msgpack.packb({"segment_size": segment_size, "args": args}))


@pytest.mark.parametrize("manifest, code", [
    (_manifest([100] * (MAX_ARGS + 1)), "too-large"),
    (_manifest([SEGMENT, SEGMENT]), "too-large"),  # 2 segments over the 10,000-byte limit below
    (Data(Name("/m"), b"\xc1not msgpack"), "bad-arguments"),
    (_manifest([100], segment_size=1), "bad-arguments"),  # a segment size the format refuses
])
def test_a_refused_manifest_carries_the_code_of_its_refusal(manifest: Data, code: str) -> None:
    with pytest.raises(ArgumentsRefused) as refused:
        _host(max_arg_bytes=10_000)._check_manifest(manifest)
    assert refused.value.code == code


def test_a_manifest_within_the_limits_is_accepted() -> None:
    plan = _host(max_arg_bytes=10_000)._check_manifest(_manifest([100, 200]))
    assert [size for size, _ in plan["args"]] == [100, 200]
