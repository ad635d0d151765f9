"""A fuzzer for the link-state protocol (issue #26): nothing a peer sends may raise.

Hellos (Interests and answers), syncs, fetches and fetch answers carrying
records, with random and adversarial fields (names that do not parse,
versions at and past the bounds, wrong types, oversized lists, garbage
bytes), are fed to a sans-IO `Router` on its neighbour face and on strangers'
faces, interleaved with its timers.  Whatever arrives, the router must not
raise, its own version must never jump past what it originated, and every
route it installs must be a name that parses.

`make test` runs a small size (hypothesis, and a seeded generator);
`make test-adversarial` runs the seeded generator at full size (marker
``fullsize``; ``ICND_FUZZ_MESSAGES``, default 200,000).
"""

from __future__ import annotations

import os
import random
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icnd.codec import encode
from icnd.core.routing.lsdb import checked_name, record_name
from icnd.errors import DecodeError
from icnd.core.routing.router import ROUTING_PREFIX, RouteUpdate, Router, RouterConfig
from icnd.name import Name
from icnd.packet import Data, Interest, SigType
from icnd.security import Ed25519Key, make_data
from tests.core.routing.routing_net import bring_up

NAMES = ["/node/a", "/node/b", "/node/c", "/%ZZ", "nope", "/", "/a//b", "/<svg>", "/" + "x" * 600, "/node/b/%00",
         "/fn/f", "/v=3", "/seg=1"]
VERSIONS = [0, 1, 5, 2**31, 2**63 - 1, 2**63, 2**64 - 1, -1]
SCALARS: list[Any] = [None, True, 1.5, "x", b"x", [], {}, -3, -(2**63)]


def _value(rnd: random.Random) -> Any:
    pick = rnd.random()
    if pick < 0.4:
        return rnd.choice(NAMES)
    if pick < 0.7:
        return rnd.choice(VERSIONS)
    if pick < 0.85:
        return rnd.choice(SCALARS)
    return rnd.randbytes(rnd.randrange(0, 40))


def _record_wire(rnd: random.Random) -> bytes:
    origin = rnd.choice(NAMES if rnd.random() < 0.3 else NAMES[:3] + ["/node/q", "/node/r"])
    ver = rnd.choice(VERSIONS if rnd.random() < 0.3 else [1, 5, 2**31, 2**63 - 1])
    valid = rnd.random() < 0.6  # a well-formed record: the deeper paths (storing, routing) are reached
    good_names = NAMES[:3] + ["/node/q", "/node/r", "/fn/f"]
    body: dict[str, Any] = {
        "o": origin if rnd.random() < 0.9 else _value(rnd),
        "v": ver if rnd.random() < 0.9 else _value(rnd),
        "t": 100.0 if valid else rnd.choice([100.0, 0.5, 1e9, "x", 30]),
        "a": [[rnd.choice(good_names if valid else NAMES), 1 if valid else rnd.choice([1, 0, -1, 2**40, "x"])]
              for _ in range(rnd.randrange(0, 4))],
        "p": [[rnd.choice(good_names if valid else NAMES), rnd.choice([None, 3] if valid else [None, 3, -1]),
               rnd.choice([None, 1] if valid else [None, 1, "x"])] for _ in range(rnd.randrange(0, 4))],
        "c": [] if valid else rnd.choice([[], [b"junk"], "x"]),
    }
    if rnd.random() < 0.1:
        del body[rnd.choice(list(body))]
    try:
        name = record_name(Name(origin), ver) if rnd.random() < 0.8 else Name("/node/q/routing/ls")
    except ValueError:
        name = Name("/node/z/routing/ls/v=1")
    content = msgpack.packb(body) if rnd.random() < 0.95 else rnd.randbytes(30)
    return encode(make_data(name, content))


def _message(rnd: random.Random, r: Router) -> tuple[int, Any]:
    """One message toward `r`: (face, packet)."""
    face = 5 if rnd.random() < 0.8 else rnd.choice([6, 99])
    kind = rnd.choice(["hello", "sync", "ls", "other"])
    if rnd.random() < 0.5:  # an Interest
        if kind == "hello":
            params: Any = {"n": _value(rnd), "d": rnd.choice([b"d" * 16, b"", _value(rnd)]),
                           "c": rnd.choice([b"c" * 16, b"", _value(rnd)])}
        elif kind == "sync" and rnd.random() < 0.6:  # well formed: what makes the router fetch
            params = {"n": "/node/b", "v": [[rnd.choice(NAMES[:3] + ["/node/q", "/node/r"]),
                                             rnd.choice([1, 5, 2**31, 2**63 - 1])] for _ in range(rnd.randrange(1, 4))]}
        elif kind == "sync":
            params = {"n": _value(rnd), "v": [[_value(rnd), _value(rnd)] for _ in range(rnd.randrange(0, 5))]}
            if rnd.random() < 0.3:
                params["full"] = rnd.choice([True, 1, "yes"])
        else:
            params = {"n": _value(rnd), "w": [[_value(rnd), _value(rnd)] for _ in range(rnd.randrange(0, 5))]}
        if rnd.random() < 0.1:
            params = _value(rnd)
        raw = msgpack.packb(params) if rnd.random() < 0.95 else rnd.randbytes(20)
        return face, Interest.with_params(ROUTING_PREFIX.append(kind), raw)
    # a Data: an answer to what the router asked (when it asked), or unsolicited
    nb = r.neighbors.get(5)
    if kind == "ls" and nb is not None and nb.fetch is not None and rnd.random() < 0.8:
        records = [_record_wire(rnd) for _ in range(rnd.randrange(0, 4))]
        if rnd.random() < 0.1:
            records.append(_value(rnd))
        return 5, make_data(nb.fetch[0], msgpack.packb(records))
    if kind == "hello" and nb is not None and nb.challenge is not None and rnd.random() < 0.7:
        content = {"n": _value(rnd), "d": b"d" * 16, "p": rnd.choice([b"", rnd.randbytes(50), _value(rnd)]),
                   "k": rnd.choice([[], [b"x"], "x"])}
        return 5, make_data(nb.challenge[0], msgpack.packb(content))
    return face, make_data(ROUTING_PREFIX.append(kind), rnd.randbytes(rnd.randrange(0, 60)))


def _check(r: Router, actions: list[Any], ceiling: int) -> None:
    assert r.version <= ceiling, "the router's own version moved because a peer said so"
    for action in actions:
        if isinstance(action, RouteUpdate):
            Name(action.prefix.to_uri())  # a route is a name that parses


_KEY = Ed25519Key.generate(Name("/node/a"))


def _sign_own(name: Name, content: bytes) -> Data:
    return make_data(name, content, key=_KEY)


def _signer(data: Data, certs: tuple[bytes, ...]) -> bytes:
    """Keys as the router sees them: its own (Ed25519 here) or a peer's (digest-signed here)."""
    return b"own" if data.sig_type == SigType.ED25519 else b"peer"


def _router(**cfg: Any) -> Router:
    return Router(Name("/node/a"), sign=_sign_own, verify=_signer, now=0.0, config=RouterConfig(**cfg))


def fuzz(seed: int, messages: int) -> Router:
    rnd = random.Random(seed)
    r = _router(max_origins_per_neighbor=50)
    r.add_neighbor(5, 1)
    bring_up(r, 5, "/node/b", 0.01)
    now = 0.01
    for i in range(messages):
        now += rnd.random() * 0.02
        ceiling = r.version + 64  # it originates a few versions per pass at most, never a peer's number
        if i % 50 == 0:
            bring_up(r, 5, "/node/b", now)  # keep the neighbour up: the deeper paths stay reachable
        face, packet = _message(rnd, r)
        if isinstance(packet, Interest):
            actions = r.on_interest(face, packet, now)
        else:
            actions = r.on_data(face, packet, now)
        if r.next_deadline() <= now:
            actions += r.on_timer(now)
        _check(r, actions, ceiling)
    return r


def test_seeded_routing_fuzz_never_raises() -> None:
    for seed in range(3):
        r = fuzz(seed, 2_000)
        assert r.counters["messages_malformed"] + r.counters["records_malformed"] > 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["hello", "sync", "ls", "x"]), st.booleans(),
                          st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.binary(max_size=20)
                                       | st.text(max_size=20) | st.sampled_from(NAMES),
                                       lambda inner: st.lists(inner, max_size=4)
                                       | st.dictionaries(st.sampled_from(["n", "d", "c", "v", "w", "p", "k", "full"]),
                                                         inner, max_size=5),
                                       max_leaves=12)),
                max_size=20))
def test_hypothesis_routing_messages_never_raise(messages: list[tuple[str, bool, Any]]) -> None:
    r = _router()
    r.add_neighbor(5, 1)
    bring_up(r, 5, "/node/b", 0.01)
    ceiling = r.version + 64
    now = 0.02
    for kind, answer, params in messages:
        now += 0.01
        raw = msgpack.packb(params)
        if answer:
            nb = r.neighbors[5]
            name = (nb.fetch[0] if kind == "ls" and nb.fetch else nb.challenge[0] if kind == "hello" and nb.challenge
                    else ROUTING_PREFIX.append(kind))
            actions = r.on_data(5, make_data(name, raw), now)
        else:
            actions = r.on_interest(5, Interest.with_params(ROUTING_PREFIX.append(kind), raw), now)
        actions += r.on_timer(now)
        _check(r, actions, ceiling)


@pytest.mark.fullsize
def test_fullsize_routing_fuzz() -> None:
    total = int(os.environ.get("ICND_FUZZ_MESSAGES", "200000"))
    per_seed = 20_000
    for seed in range(max(1, total // per_seed)):
        fuzz(1000 + seed, per_seed)
    print(f"FULLSIZE {{\"routing_fuzz_messages\": {total}}}")


def _slow_checked(value: str) -> bool:
    """The general path of `checked_name`: the name parses and prints back the same."""
    try:
        return value != "/" and len(value) <= 512 and value.startswith("/") and Name(value).to_uri() == value
    except ValueError:
        return False


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet="ab.~-_%/=2F09Z ", max_size=8), min_size=1, max_size=70).map(
    lambda parts: "/" + "/".join(parts)))
def test_checked_name_fast_path_agrees_with_the_general_path(value: str) -> None:
    try:
        checked_name(value, "name")
        fast = True
    except DecodeError:
        fast = False
    assert fast == _slow_checked(value), value
