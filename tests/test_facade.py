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
        icnd.no_such_name  # type: ignore[attr-defined]
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("icnd.no_such_name resolved")
