"""The error hierarchy and the one signed error format (icnd.errors)."""

from __future__ import annotations

import msgpack
import pytest

import icnd
from icnd.codec import decode, encode
from icnd.errors import (
    CommandError,
    Error,
    Nacked,
    NotFound,
    RemoteError,
    Timeout,
    Unauthorized,
    error_data,
    error_exception,
    error_fields,
    raise_for_error,
)
from icnd.packet import ContentType, Data
from icnd.security import DigestKey

NAME = icnd.Name("/fn/f/call")


def test_error_data_writes_the_documented_body() -> None:
    data = error_data(NAME, "bad-arguments", "argument 0: not a value")
    assert (data.name, data.content_type, data.freshness_ms) == (NAME, ContentType.ERROR, 0)
    # byte for byte what every writer produced before there was one writer
    assert data.content == msgpack.packb({"code": "bad-arguments", "message": "argument 0: not a value"})
    # extra fields come first (the aggregator's mismatch layouts)
    layouts = [["<f4", [3], [0, 1]]]
    with_layouts = error_data(NAME, "mismatch", "m", layouts=layouts)
    assert with_layouts.content == msgpack.packb({"layouts": layouts, "code": "mismatch", "message": "m"})


def test_round_trip_through_signing_and_the_wire() -> None:
    data = DigestKey().sign(error_data(NAME, "ValueError", "x must be > 0", freshness_ms=5))
    back = decode(encode(data))
    assert isinstance(back, Data) and back.freshness_ms == 5
    assert error_fields(back) == ("ValueError", "x must be > 0")
    with pytest.raises(RemoteError) as info:
        raise_for_error(back)
    assert type(info.value) is RemoteError
    assert (info.value.code, info.value.message) == ("ValueError", "x must be > 0")
    assert str(info.value) == "ValueError: x must be > 0"


@pytest.mark.parametrize(
    ("code", "kind", "text"),
    [
        ("unauthorized", Unauthorized, "/fn/f/call: unauthorized: who are you"),
        ("not-found", NotFound, "/fn/f/call: who are you"),
        ("404", CommandError, "404: who are you"),
        ("409", CommandError, "409: who are you"),
        ("gone", RemoteError, "gone: who are you"),
        ("no-such-function", RemoteError, "no-such-function: who are you"),
        ("٤٠٤", RemoteError, "٤٠٤: who are you"),  # decimal, but not ASCII: not a status
    ],
)
def test_each_code_maps_to_one_exception(code: str, kind: type, text: str) -> None:
    exc = error_exception(error_data(NAME, code, "who are you"))
    assert type(exc) is kind and isinstance(exc, Error)
    assert str(exc) == text
    if kind is CommandError:
        assert isinstance(exc, CommandError) and exc.status == int(code) and exc.message == "who are you"


def test_a_refusal_says_unauthorized_once_naming_what_was_called() -> None:
    """[issue 27, item 13] A host's refusal that starts with the call's own name
    (as hosts write them) is not repeated; the caller may name the function
    instead of its long trigger name."""
    refusal = error_data(NAME, "unauthorized", f"{NAME}: /client/bob/KEY/1 may not call /fn/f")
    assert str(error_exception(refusal)) == "/fn/f/call: unauthorized: /client/bob/KEY/1 may not call /fn/f"
    exc = error_exception(refusal, icnd.Name("/fn/f"))
    assert type(exc) is Unauthorized
    assert str(exc) == "/fn/f: unauthorized: /client/bob/KEY/1 may not call /fn/f"


def test_the_facts_are_attributes() -> None:
    """[issue 27, item 13] `Nacked.reason` (and its detail, name, retries) and
    `Timeout.missing`, so that code need not parse messages."""
    nacked = Nacked("no-route", "/x: nobody serves it", name=icnd.Name("/x"), detail="d", retries=3)
    assert (nacked.reason, nacked.detail, nacked.name, nacked.retries) == ("no-route", "d", icnd.Name("/x"), 3)
    assert str(nacked) == "/x: nobody serves it"
    assert (Nacked("congestion").detail, Nacked("congestion").retries, str(Nacked("congestion"))) == \
        ("", 0, "nacked: congestion")
    assert Timeout("no answer").missing == ()
    late = Timeout("round 2 is incomplete", missing=["m4", "m3"])
    assert late.missing == ("m4", "m3") and str(late) == "round 2 is incomplete"


@pytest.mark.parametrize("content", [b"", b"\xc1", msgpack.packb({"code": "x"}), msgpack.packb([1, 2])])
def test_a_malformed_body_is_a_remote_error_saying_so(content: bytes) -> None:
    data = Data(NAME, content, ContentType.ERROR)
    code, message = error_fields(data)
    assert code == "error" and message.startswith("/fn/f/call: malformed error")
    with pytest.raises(RemoteError, match="malformed error"):
        raise_for_error(data)


def test_only_error_data_raises() -> None:
    for kind in (ContentType.BLOB, ContentType.THUNK, ContentType.MANIFEST):
        raise_for_error(Data(NAME, msgpack.packb({"code": "unauthorized", "message": "no"}), kind))


def test_command_error_is_the_one_command_error() -> None:
    exc = CommandError(400, "missing argument 'name'")
    assert isinstance(exc, RemoteError) and isinstance(exc, Error)
    assert (exc.status, exc.code, exc.message) == (400, "400", "missing argument 'name'")


def test_every_user_visible_exception_is_an_icnd_error() -> None:
    from icnd.compute.pool import WorkerError
    from icnd.core.tables.fib import TableFull
    from icnd.objects.store import ObjectStoreError
    from icnd.reduction.contrib import ReductionError
    from icnd.reduction.segment import SegmentError
    from icnd.topology.spec import TopologyError
    from icnd.sim.scenario import ScenarioError

    for kind in (WorkerError, TableFull, ObjectStoreError, ReductionError, SegmentError, ScenarioError,
                 TopologyError, CommandError):
        assert issubclass(kind, Error), kind
    for kind in (ReductionError, SegmentError, ScenarioError, TopologyError):  # and still what they were
        assert issubclass(kind, ValueError), kind
