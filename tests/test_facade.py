"""`import icnd` stays cheap: the façade loads the client and the features on first use (PEP 562)."""

from __future__ import annotations

import subprocess
import sys

import icnd

HEAVY = ("trio", "numpy", "cryptography.hazmat.primitives.asymmetric.x25519", "icnd.client", "icnd.compute",
         "icnd.reduction", "icnd.sync")


def _loaded_after(statement: str) -> list[str]:
    """The HEAVY modules loaded by `statement` in a fresh interpreter."""
    code = f"import sys\n{statement}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_importing_the_package_or_the_core_loads_no_client_and_no_trio() -> None:
    assert _loaded_after("import icnd") == []
    assert _loaded_after("import icnd.core.fw.forwarder") == []
    assert _loaded_after("import icnd; icnd.Name('/a'); icnd.decode(icnd.encode(icnd.Data('/a', b'x')))") == []


def test_the_lazy_names_load_on_first_use() -> None:
    assert "icnd.client" in _loaded_after("import icnd; icnd.connect")
    assert "icnd.sync" in _loaded_after("import icnd; icnd.sync.connect")
    assert "icnd.sync" in _loaded_after("import icnd.sync")
    assert "numpy" in _loaded_after("from icnd import Reduced")


def test_the_public_names_are_all_there() -> None:
    import importlib

    from icnd.client import Client, connect
    from icnd.compute.registry import function
    from icnd.reduction.consumer import Reduced

    assert (icnd.Client, icnd.connect, icnd.function, icnd.Reduced) == (Client, connect, function, Reduced)
    assert icnd.sync is importlib.import_module("icnd.sync") and "sync" in dir(icnd)
    for name in icnd.__all__:
        assert getattr(icnd, name) is not None, name
    assert set(icnd.__all__) <= set(dir(icnd))
    try:
        icnd.no_such_name  # type: ignore[attr-defined]  # a missing name on purpose
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("icnd.no_such_name resolved")


def test_the_blocking_and_asyncio_facades_offer_every_method_of_the_client() -> None:
    """`icnd.sync.METHODS` is the facades' table: a method added to `Client`
    without an entry, or of another kind than its entry says, fails here."""
    import inspect

    from icnd.aio import AsyncClient
    from icnd.client import Client
    from icnd.sync import CLOSE, METHODS, SyncClient, kind_of, public_methods

    assert set(METHODS) == public_methods(Client)
    for name, kind in METHODS.items():
        assert kind_of(getattr(Client, name)) == ("call" if kind == CLOSE else kind), name
    assert public_methods(SyncClient) == public_methods(Client) | {"close"}
    assert public_methods(AsyncClient) == public_methods(Client)
    for name in METHODS:
        # same parameters (and docstring), so the API reference of each facade is the client's
        expected = inspect.signature(getattr(Client, name)).parameters
        for facade in (SyncClient, AsyncClient):
            parameters = inspect.signature(getattr(facade, name)).parameters
            assert [(p.name, p.kind, p.default) for p in parameters.values()] == \
                [(p.name, p.kind, p.default) for p in expected.values()], (facade, name)
        if METHODS[name] != CLOSE:  # AsyncClient.aclose also ends the thread: its docstring says so
            assert getattr(AsyncClient, name).__doc__ == getattr(Client, name).__doc__, name
        if METHODS[name] in ("call", "plain", CLOSE):
            assert inspect.iscoroutinefunction(getattr(AsyncClient, name)), name


def test_kind_of_tells_the_kinds_apart() -> None:
    from contextlib import asynccontextmanager, contextmanager

    from icnd.sync import ASYNC_CONTEXT, CALL, CONTEXT, PLAIN, kind_of

    async def coroutine() -> None: ...

    def plain() -> None: ...

    @asynccontextmanager
    async def async_context():  # type: ignore[no-untyped-def]  # a sample of each kind, untyped on purpose
        yield

    @contextmanager
    def context():  # type: ignore[no-untyped-def]  # a sample of each kind, untyped on purpose
        yield

    async def iterator():  # type: ignore[no-untyped-def]  # a sample of each kind, untyped on purpose
        yield 1

    assert [kind_of(f) for f in (coroutine, plain, async_context, context, iterator)] == \
        [CALL, PLAIN, ASYNC_CONTEXT, CONTEXT, "iterator"]


def test_the_facades_communicators_offer_every_collective_of_the_trio_one() -> None:
    """`icnd.sync.COLLECTIVES` (each with its ``i<name>`` form) is every public
    method of `icnd.collective.Communicator`; the blocking and asyncio
    communicators offer each with the same parameters."""
    import inspect

    from icnd.aio import AioCommunicator, AioRequest
    from icnd.collective import Communicator
    from icnd.sync import COLLECTIVES, SyncCommunicator, SyncRequest, public_methods

    names = set(COLLECTIVES) | {"i" + name for name in COLLECTIVES}
    assert public_methods(Communicator) == names
    assert public_methods(SyncCommunicator) == names
    assert public_methods(AioCommunicator) == names
    for name in names:
        expected = [(p.name, p.kind, p.default)
                    for p in inspect.signature(getattr(Communicator, name)).parameters.values()]
        for facade in (SyncCommunicator, AioCommunicator):
            got = [(p.name, p.kind, p.default) for p in inspect.signature(getattr(facade, name)).parameters.values()]
            assert got == expected, (facade, name)
        assert inspect.iscoroutinefunction(getattr(AioCommunicator, name)) == (not name.startswith("i")), name
        assert not inspect.iscoroutinefunction(getattr(SyncCommunicator, name)), name
    assert inspect.signature(SyncCommunicator.iallreduce).return_annotation is SyncRequest
    assert inspect.signature(AioCommunicator.ibcast).return_annotation is AioRequest
