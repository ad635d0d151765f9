"""The host's side of named functions (the protocol is in `icnd.compute.rice`).

A `FunctionHost` serves the prefixes of its functions through an `Endpoint`
(an application's client, or the node's own in-process client for
``--function``).  A trigger is admitted (busy: Nack no-resources, so the
strategy tries another host), its caller proven and checked against the
function's policy before anything else, the arguments' sizes checked
before any bulk pull, and each call-id runs at most once.  A result ready
within `INLINE_BUDGET` comes back in the trigger's Data; a later one as a
thunk, stored as an object under ``/node/<host>/thunk/<id>`` when done and
kept for the retention time (`icnd.compute.host_jobs.ThunkResults`).  Every refusal or failure is a signed ERROR
(`icnd.errors.error_data`) whose message is cut at `MAX_ERROR_MESSAGE`.
Answers are signed with the endpoint's key; a host without one (a keyless
client) has its node sign them (`_signed_by_node`), since callers refuse
digest-only answers.
Sessions (`icnd.compute.host_sessions`; the caller's side is
`icnd.compute.caller.CallerSessions`) let a known caller's small calls be
proven, and answered, by MACs instead of signatures.
The policy is one method, `_admits`, for every form of call: the allow list
(key-name prefixes or trust-schema patterns) and, when the host's validator
has a trust schema, the caller's certificate chain (carried in its signed
call, or fetched by key name); a session's calls pass it again, through the
validator's cache, so a session never outlives the caller's certificate.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypedDict

import msgpack
import trio

from icnd.codec import signed_portion_of_wire
from icnd.compute.pool import POOLS, Outcome, ProcessPool, ThreadPool, WorkerError
from icnd.compute.host_jobs import Job, ThunkResults
from icnd.compute.host_sessions import HostSession, HostSessions
from icnd.compute.registry import HostedFunction, target_of
from icnd.compute.rice import (
    ARG,
    AUTH,
    MANIFEST,
    MAX_ARGS,
    MAX_OFFERED_SESSIONS,
    MAX_POLL_WAIT,
    SESSION_TTL,
    THUNK,
    call_proof,
)
from icnd.compute.named import NamedArg, decode_argument
from icnd.compute.resolve import ByteBudget, await_stored, fetch_ref
from icnd.compute.values import decode_value, encode_value
from icnd.endpoint import Endpoint
from icnd.errors import CommandError, DecodeError, Error, Nacked, Timeout, VerificationError, error_data
from icnd.name import T_PARAMS, T_RNP, Name, generic, valid_wire_comps
from icnd.objects.fetch import fetch_segments
from icnd.objects.manifest import Manifest
from icnd.packet import ContentType, Data, Interest, Nack, NackReason
from icnd.security import KEY_ID_LEN, Ed25519VerifyKey, SigningKey
from icnd.trust.cert import Certificate, CertificateError, certificate_from_bytes
from icnd.trust.validator import FetchCert, Validator

log = logging.getLogger("icnd.compute")

RI_LIFETIME = 1.0
RI_ATTEMPTS = 3
INLINE_BUDGET = 0.2  # a result ready this fast comes back in the trigger Data
INLINE_MAX = 256 * 1024  # larger results always go through a thunk (as an object)
POLL_HOLD = 3.0  # seconds a host holds a poll of a running job, answering it when the job ends
POLL_HOLD_MARGIN = 0.5  # ... and never closer than this to the poll's expiry
MAX_HELD_POLLS = 1024  # polls held at once; beyond, a poll is answered at once with the ETA
MAX_CLOCK_SKEW = 120.0  # seconds: a small call's signed timestamp must be this fresh
MAX_ERROR_MESSAGE = 1000  # characters of an error message (a function's exception's) an ERROR carries


LOAD_REPORT_INTERVAL = 0.5  # a host tells its node its capacity and load at most this often (on change)
LOAD_REPORT_TIMEOUT = 2.0  # the deadline of one ("routing", "load") command


@dataclass(frozen=True)
class HostLimits:
    max_jobs: int = 32  # calls being handshaked or run at once; beyond: Nack no-resources
    max_arg_bytes: int = 64 * 1024 * 1024
    retention: float = 60.0  # seconds a finished result stays fetchable
    max_tombstones: int = 10_000
    max_sessions: int = 4096  # session keys granted to callers, least recently used dropped
    max_memo_bytes: int = 64 * 1024 * 1024  # pure results remembered, least recently used dropped
    max_ref_bytes: int = 256 * 1024 * 1024  # the largest named argument (icnd.Ref) a call's host fetches
    ref_timeout: float = 300.0  # seconds a call's host waits for its named arguments (futures included)
    ref_budget_bytes: int = 1024 * 1024 * 1024  # named arguments' bytes held at once over all calls


_verify_keys: OrderedDict[bytes, Ed25519VerifyKey] = OrderedDict()
VERIFY_KEY_CACHE = 1024  # callers' public keys kept parsed, least recently used dropped


def _verify_key(pub: bytes) -> Ed25519VerifyKey:
    """The parsed public key (cached: parsing costs as much as a quarter of a
    verification); raises ValueError for a malformed one."""
    key = _verify_keys.get(pub)
    if key is None:
        key = _verify_keys[pub] = Ed25519VerifyKey.from_bytes(pub)
        if len(_verify_keys) > VERIFY_KEY_CACHE:
            _verify_keys.popitem(last=False)
    else:
        _verify_keys.move_to_end(pub)
    return key


def _fresh(ts: int) -> bool:
    """A small call's timestamp (the caller's clock, ms) is within `MAX_CLOCK_SKEW` of ours."""
    return abs(time.time_ns() // 1_000_000 - ts) <= MAX_CLOCK_SKEW * 1000


def _key_name(value: object) -> Name:
    """A caller's key name from a small call: wire-form components (or, from
    older callers, a URI)."""
    if isinstance(value, str):
        return Name(value)
    if isinstance(value, list):
        comps = tuple(value)
        if valid_wire_comps(comps):
            return Name.from_wire(comps)
    raise ValueError("malformed key name")


def _result_or_error(outcome: Outcome) -> tuple[bytes | None, tuple[str, str] | None]:
    """A worker thread's outcome as (encoded result, None) or (None, (exception type, message))."""
    ok, value = outcome
    if ok:
        return value, None
    if isinstance(value, WorkerError):
        return None, (value.type_name, value.message)
    return None, (type(value).__name__, str(value))


# a function host's counters (in `icnd status`, zero on nodes that host nothing)
HOST_COUNTERS = ("fn_calls", "fn_busy", "fn_signed_calls", "fn_session_calls", "fn_sessions_granted",
                 "fn_session_unknown", "fn_unauthorized", "fn_bad_calls", "fn_executions", "fn_memo_evictions",
                 "fn_refs_fetched", "fn_refs_refused")
HOST_TABLES = ("fn_active", "fn_jobs", "fn_sessions", "fn_memo", "fn_memo_bytes", "fn_ref_bytes")


class ArgumentsRefused(ValueError):
    """A call's argument manifest is refused before any bulk pull; `code` is
    the kind of the ERROR answered to the caller: ``too-large`` (beyond the
    host's limits) or ``bad-arguments`` (malformed)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class _RefUnavailable(Exception):
    """A call's named argument could not be fetched (the message names it)."""


class _NotOurs(Exception):
    """A small call named sessions this host does not hold: the `answer` (session-unknown)."""

    def __init__(self, answer: Data) -> None:
        super().__init__("session-unknown")
        self.answer = answer


CallKey = tuple[tuple[bytes, ...], bytes]
"""A call as the host knows it: (its function prefix's components, its call-id
component) for the call-id table; (prefix components, digest of the arguments)
for the memo of pure results."""


class ArgumentPlan(TypedDict):
    """A caller's argument manifest once checked: what to pull, and in what pieces."""

    segment_size: int
    args: list[tuple[int, bytes]]  # per argument: (size in bytes, its segments' SHA-256 digests)
    future: bool  # a submitted call: answered with a thunk at once (`Client.submit`)


@dataclass
class Invocation:
    answer: Data | Nack | None = None
    settled: trio.Event = field(default_factory=trio.Event)


class FunctionHost:
    """Serves named functions through an endpoint (an application's client,
    or the node's own in-process client for ``--function``)."""

    def __init__(self, ep: Endpoint, functions: list[HostedFunction], node_name: Name, *,
                 limits: HostLimits = HostLimits(), workers: int = 4, pool: str = "threads",
                 validator: Validator | None = None, fetch_cert: FetchCert | None = None,
                 results_tag: str | None = None) -> None:
        """Synchronous functions run in `workers` threads, or with ``pool =
        "processes"`` in as many worker processes (`icnd.compute.pool`): each
        must then be importable by name (ValueError otherwise).

        `validator` (default: the endpoint's, if it has one) decides, when it
        has a trust schema, whether a caller's key is certified (its chain
        reaches an anchor); `fetch_cert` fetches a certificate by key name
        (default: an Interest with CanBePrefix through the endpoint).

        Results handed out as thunks live under ``<node>/thunk/<id>``, or with
        `results_tag` under ``<node>/thunk/<tag>/<id>``: an application's host
        has one, so that it and the node's own host (``--function``), or two
        applications on one node, never answer each other's polls."""
        if pool not in POOLS:
            raise ValueError(f"function pool {pool!r}: expected one of {', '.join(POOLS)}")
        self.processes = ProcessPool(workers) if pool == "processes" else None
        if self.processes is not None:
            for f in functions:
                if not f.is_async and f.target is None:
                    f.target = target_of(f.fn)
                if not f.is_async and f.target is None:
                    raise ValueError(f"{f.prefix}: {f.fn!r} cannot run in a worker process: "
                                     "it is not importable as MODULE:CALLABLE (a lambda, closure or method?)")
        self.closed = False
        self.ep = ep
        self.validator: Validator | None = validator if validator is not None else getattr(ep, "validator", None)
        self._fetch_cert = fetch_cert or self._fetch_key
        self.functions = sorted(functions, key=lambda f: -len(f.prefix))
        self.node_name = node_name
        self.thunk_prefix = node_name.append_wire(THUNK) if results_tag is None else \
            node_name.append_wire(THUNK, generic(results_tag))
        self.limits = limits
        self.threads = ThreadPool(workers)
        self.active = 0
        # per function prefix: calls admitted and not yet answered; jobs running (or queued for a worker)
        self._admitted: dict[Name, int] = dict.fromkeys((f.prefix for f in functions), 0)
        self._running: dict[Name, int] = dict.fromkeys((f.prefix for f in functions), 0)
        self._workers = workers
        self._reported: dict[Name, tuple[int, int]] = {}  # what the node was last told
        self._told: dict[Name, tuple[int, int, int]] = {}  # (calls, capacity, load) function/report last said
        self._load_changed = trio.Event()
        self.load_reports = 0  # ("routing", "load") commands the node accepted
        self._report_error_logged = False
        self.counters = dict.fromkeys(HOST_COUNTERS, 0)
        self.calls: dict[Name, int] = dict.fromkeys((f.prefix for f in functions), 0)  # per prefix (status page)
        self._calls: OrderedDict[CallKey, Invocation] = OrderedDict()
        self._memo: OrderedDict[CallKey, bytes] = OrderedDict()  # pure results, LRU, bounded in count and bytes
        self._memo_bytes = 0
        self.ref_bytes = ByteBudget(limits.ref_budget_bytes)  # named arguments held by running calls
        self.sessions = HostSessions(limits.max_sessions)  # granted to callers of small calls
        self.results = ThunkResults(ep, self.thunk_prefix, retention=limits.retention,
                                    max_tombstones=limits.max_tombstones)
        self._nursery: trio.Nursery | None = None
        self._held_polls = 0

    async def run(self, *, task_status: trio.TaskStatus[FunctionHost] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery, AsyncExitStack() as stack:
            self._nursery = nursery
            for f in self.functions:
                await stack.enter_async_context(self.ep.serve(f.prefix, self._on_call))
                # and under this host's node name, where a call placed here is sent (`Caller._placed`)
                await stack.enter_async_context(self.ep.serve(self.directed(f), self._on_call))
            await stack.enter_async_context(self.ep.serve(self.thunk_prefix, self._on_poll))
            if self.ep.key is None:  # callers refuse digest-only answers: the node signs them
                await stack.enter_async_context(self._signed_by_node())
            nursery.start_soon(self.results.expire)
            nursery.start_soon(self._report_load)
            task_status.started(self)
            try:
                await trio.sleep_forever()
            finally:
                self.closed = True
                self.threads.close()
                if self.processes is not None:
                    self.processes.close()

    @asynccontextmanager
    async def _signed_by_node(self) -> AsyncIterator[None]:
        """Meanwhile, the node signs this keyless host's answers with its own
        key (``signing/add`` of every prefix served,
        `icnd.daemon.producers.KeylessSigning`), as it signs what a keyless
        client publishes.  Raises `CommandError` if the node refuses; stops
        (``signing/remove``) when the host does."""
        added: list[Name] = []
        try:
            for prefix in [f.prefix for f in self.functions] + [self.directed(f) for f in self.functions] \
                    + [self.thunk_prefix]:
                await self.ep.command("signing", "add", prefix=prefix.to_uri())
                added.append(prefix)
            yield
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                for prefix in added:
                    try:
                        await self.ep.command("signing", "remove", prefix=prefix.to_uri())
                    except Error:  # the connection is gone: so are the node's signatures for it
                        break

    # --- capacity and load, announced through routing (compute-aware anycast) -------------------
    def _admit(self, fn: HostedFunction, delta: int) -> None:
        self.active += delta
        self._admitted[fn.prefix] = self._admitted.get(fn.prefix, 0) + delta
        self._load_changed.set()

    def load(self) -> dict[Name, tuple[int, int]]:
        """Per hosted prefix: (capacity, load).  Capacity: the calls it can
        run at once -- its workers (threads or processes) for a synchronous
        function, ``max_jobs`` for an async one, never more than
        ``max_jobs``; load: its calls running or queued, i.e. the larger of
        the calls admitted and not yet answered (handshakes included) and
        its jobs not finished (a thunked job runs on after its call was
        answered).  The pool is shared: every synchronous prefix announces
        the same workers, since any one of them may use them all."""
        jobs = self.limits.max_jobs
        out = {}
        for f in self.functions:
            capacity = jobs if f.is_async else min(self._workers, jobs)
            out[f.prefix] = (capacity, max(self._admitted.get(f.prefix, 0), self._running.get(f.prefix, 0)))
        return out

    async def _report_load(self) -> None:
        """Tell the node each prefix's calls, capacity and load when they
        change, at most every `LOAD_REPORT_INTERVAL` (calls never wait for
        it: they only set an event): with ``("function", "report")``, which
        its status page lists (`_report_calls`), and with ``("routing",
        "load")``, which it announces with the prefix (its routing
        rate-limits load-only changes again).  A node without routing
        answers the latter 409: that part stops quietly; any other failure
        is logged once and the next change is reported anyway.  The first
        report goes at once (the capacity)."""
        routing = True  # until the node answers that it has none
        self._load_changed.set()
        while True:
            await self._load_changed.wait()
            self._load_changed = trio.Event()
            for prefix, state in self.load().items():
                await self._report_calls(prefix, state)
                if not routing or self._reported.get(prefix) == state:
                    continue
                try:
                    with trio.fail_after(LOAD_REPORT_TIMEOUT):
                        await self.ep.command("routing", "load", prefix=prefix.to_uri(),
                                              capacity=state[0], load=state[1])
                except CommandError as exc:
                    if exc.status == 409:
                        log.debug("not reporting load: %s", exc.message)
                        routing = False
                        continue
                    self._report_failed(prefix, exc)
                    continue
                except (Error, trio.TooSlowError) as exc:
                    self._report_failed(prefix, exc)
                    continue
                self._reported[prefix] = state
                self.load_reports += 1
            await trio.sleep(LOAD_REPORT_INTERVAL)

    async def _report_calls(self, prefix: Name, state: tuple[int, int]) -> None:
        """``("function", "report")`` of `prefix` with its calls and `state`
        (capacity, load), when it changed: the node lists the function on its
        status page (`icnd.daemon.mgmt.functions`)."""
        report = (self.calls.get(prefix, 0), *state)
        if self._told.get(prefix) == report:
            return
        try:
            with trio.fail_after(LOAD_REPORT_TIMEOUT):
                await self.ep.command("function", "report", prefix=prefix.to_uri(), calls=report[0],
                                      capacity=state[0], load=state[1])
        except (Error, trio.TooSlowError) as exc:
            self._report_failed(prefix, exc)
            return
        self._told[prefix] = report

    def _report_failed(self, prefix: Name, exc: BaseException) -> None:
        if not self._report_error_logged:
            self._report_error_logged = True
            log.warning("could not report the load of %s to the node (logged once): %s",
                        prefix, exc or type(exc).__name__)

    # --- calls ------------------------------------------------------------------------------
    def directed(self, fn: HostedFunction) -> Name:
        """``<node>/<fn>``: the name a call placed at this host is sent to."""
        return self.node_name.append_wire(*fn.prefix.comps)

    def _function_for(self, name: Name) -> tuple[HostedFunction, int] | None:
        """The function `name` calls, and how many of its components name it
        (its prefix, or this node's name and its prefix)."""
        comps = name.comps
        node = self.node_name.comps
        directed = comps[:len(node)] == node
        for f in self.functions:
            if f.prefix.is_prefix_of(name):
                return f, len(f.prefix)
            if directed and comps[len(node):len(node) + len(f.prefix)] == f.prefix.comps:
                return f, len(node) + len(f.prefix)
        return None

    @property
    def executions(self) -> int:
        return self.counters["fn_executions"]

    def tables(self) -> dict[str, int]:
        return dict(zip(HOST_TABLES, (self.active, len(self.results), len(self.sessions), len(self._memo),
                                      self._memo_bytes, self.ref_bytes.used)))

    async def _on_call(self, interest: Interest) -> Data | Nack | None:
        self.counters["fn_calls"] += 1
        found = self._function_for(interest.name)
        if found is None:
            self.counters["fn_bad_calls"] += 1
            return self._error(interest.name, "no-such-function", f"{interest.name} is not served here")
        fn, named_by = found
        self.calls[fn.prefix] += 1
        self._load_changed.set()  # the node's status page shows the calls (_report_calls)
        rest = interest.name.comps[named_by:]
        if len(rest) == 1 and rest[0][0] == T_PARAMS and interest.app_params is not None:
            return await self._pure_call(fn, interest)
        small = len(rest) == 2 and rest[1][0] == T_PARAMS and interest.app_params is not None
        if len(rest) != 2 or not (rest[1][0] == T_RNP or small):
            self.counters["fn_bad_calls"] += 1
            return self._error(interest.name, "no-such-function",
                               f"{interest.name}: expected {fn.prefix}/<call-id>/rnp=<R> or a params-sha256 call")
        key: CallKey = (fn.prefix.comps, rest[0])
        known = self._calls.get(key)
        if known is not None:  # a retransmitted trigger: the call-id runs once
            if known.answer is None:
                await known.settled.wait()
            answer = known.answer
            if not isinstance(answer, Data):
                return None
            if answer.name != interest.name:  # the id under another name: never the answer (unproven asker)
                return self._error(interest.name, "call-id-reused",
                                   f"call-id {rest[0][1:].hex()} was already answered under another name")
            return answer
        if self.active >= self.limits.max_jobs:
            self.counters["fn_busy"] += 1
            return Nack.for_interest(interest, NackReason.NO_RESOURCES, f"{self.node_name} is busy")
        invocation = self._calls[key] = Invocation()
        while len(self._calls) > 4 * self.limits.max_tombstones:
            self._calls.popitem(last=False)
        self._admit(fn, +1)
        try:
            if small:
                invocation.answer = await self._small_call(fn, interest)
            else:
                invocation.answer = await self._handshake_and_run(fn, interest, rest[1])
        except _NotOurs as exc:
            self._forget_call(key, invocation)
            invocation.answer = exc.answer
        except Error as exc:  # the caller vanished mid-handshake: nothing to answer
            log.info("call %s abandoned: %s", interest.name, exc)
            self._forget_call(key, invocation)
            invocation.answer = None
        except Exception as exc:  # a bug: the caller learns of it, the host keeps serving
            log.exception("call %s failed", interest.name)
            invocation.answer = self._error(interest.name, "internal-error", f"{type(exc).__name__}: {exc}")
        finally:
            self._admit(fn, -1)
            invocation.settled.set()
        return invocation.answer

    def _forget_call(self, key: CallKey, invocation: Invocation) -> None:
        """Let the call-id run again (nothing ran under it)."""
        if self._calls.get(key) is invocation:
            del self._calls[key]

    async def _pull(self, name: Name) -> Data:
        """A reflexive Interest, retried a few times."""
        last: Exception | None = None
        for _ in range(RI_ATTEMPTS):
            try:
                return await self.ep.express(Interest(name, lifetime_ms=int(RI_LIFETIME * 1000)),
                                                 timeout=RI_LIFETIME, retx=None)
            except Timeout as exc:
                last = exc
        raise Timeout(f"{name}: the caller did not answer ({last})")

    async def _handshake_and_run(self, fn: HostedFunction, ti: Interest, reflexive: bytes) -> Data:
        base = Name.from_wire((reflexive,))
        # 1. who is calling, checked before anything else
        challenge = secrets.token_bytes(16)
        auth = await self._pull(base.append_wire(AUTH, generic(challenge)))
        proven = self._check_auth(auth, ti)
        refusal = "the caller's proof of identity is invalid" if proven is None else \
            await self._admits(fn, proven[0], proven[1], proven[2])
        if refusal is not None:
            self.counters["fn_unauthorized"] += 1
            return self._error(ti.name, "unauthorized", f"{ti.name}: {refusal}")
        # 2. what is coming, checked before any bulk transfer
        manifest_data = await self._pull(base.append_wire(MANIFEST))
        try:
            plan = self._check_manifest(manifest_data)
        except ArgumentsRefused as exc:
            return self._error(ti.name, exc.code, str(exc))
        # 3. the arguments, pipelined and checked segment by segment
        args: list[Any] = []
        for index, (size, digests) in enumerate(plan["args"]):
            arg_name = base.append_wire(ARG, generic(str(index)))
            manifest = Manifest(arg_name, 0, size, plan["segment_size"], digests)
            try:
                blob = await fetch_segments(self.ep, manifest)
            except VerificationError as exc:
                return self._error(ti.name, "bad-arguments", str(exc))
            except (Nacked, Timeout) as exc:
                raise Timeout(f"{ti.name}: arguments could not be fetched: {exc}") from None
            try:
                args.append(decode_argument(blob))
            except DecodeError as exc:
                return self._error(ti.name, "bad-arguments", f"argument {index}: {exc}")
        return await self._start(fn, ti.name, args, memo_key=(fn.prefix.comps, self._args_digest(plan)),
                                 future=plan["future"])

    async def _small_call(self, fn: HostedFunction, ti: Interest) -> Data:
        """A call whose arguments and proof of identity ride in the trigger:
        an Ed25519 signature (which may offer a session key: the answer is
        then wrapped in a GRANT) or MACs under sessions granted before."""
        base = ti.name[:-1]
        try:
            body = msgpack.unpackb(ti.app_params, raw=False, max_array_len=MAX_ARGS)
            encoded, ts = body["args"], body["ts"]
            if not isinstance(encoded, list) or not all(isinstance(b, bytes) for b in encoded):
                raise ValueError("arguments are not a list of encoded values")
            if type(ts) is not int:
                raise ValueError("malformed proof")
            offered, kx, future = body.get("sessions"), body.get("kx"), body.get("future", False)
            if type(future) is not bool:
                raise ValueError("malformed future flag")
            if kx is not None and (offered is not None or not (isinstance(kx, bytes) and len(kx) == 32)):
                raise ValueError("malformed session key offer (only a signed call may make one)")
            cert = body.get("cert")
            if offered is None:
                pub, sig, key_name = body["pub"], body["sig"], _key_name(body["key"])
                if not isinstance(pub, bytes) or not isinstance(sig, bytes):
                    raise ValueError("malformed proof")
                if cert is not None and not isinstance(cert, bytes):
                    raise ValueError("malformed certificate")
            elif not (isinstance(offered, list) and 0 < len(offered) <= MAX_OFFERED_SESSIONS and all(
                    isinstance(o, list) and len(o) == 2 and all(isinstance(v, bytes) for v in o) for o in offered)):
                raise ValueError("malformed session proofs")
        except Exception as exc:
            self.counters["fn_bad_calls"] += 1
            return self._error(ti.name, "bad-arguments", f"{ti.name}: malformed call: {exc}")
        counters = self.counters
        session: HostSession | None = None
        if offered is not None:
            session, ours = self.sessions.find(offered, call_proof(base, ts, encoded, future=future),
                                               trio.current_time())
            if not ours:  # nothing ran: forget the call-id, so that the signed retry (same id) runs it
                counters["fn_session_unknown"] += 1
                raise _NotOurs(self._error(ti.name, "session-unknown",
                                           f"{self.node_name} holds none of the call's sessions"))
            counters["fn_session_calls"] += 1
            principal = session.principal if session is not None and _fresh(ts) else None
            if session is not None:
                pub, cert = session.public_key, None
        else:
            counters["fn_signed_calls"] += 1
            principal = self._check_proof(key_name, pub, sig, call_proof(base, ts, encoded, kx, future=future), ts)
        signer = None if session is None else session.answers
        if principal is None:
            counters["fn_unauthorized"] += 1
            return self._error(ti.name, "unauthorized", f"{ti.name}: the caller's proof of identity is invalid",
                               signer)
        # the same policy for a session's call as for the signed call that got it (the validator's
        # cache makes the certificate check a lookup; once the chain is no longer valid, it fails)
        refusal = await self._admits(fn, principal, pub, cert)
        if refusal is not None:
            counters["fn_unauthorized"] += 1
            return self._error(ti.name, "unauthorized", refusal, signer)
        try:
            args = [decode_argument(b) for b in encoded]
        except DecodeError as exc:
            counters["fn_bad_calls"] += 1
            return self._error(ti.name, "bad-arguments", str(exc), signer)
        digest = hashlib.sha256(b"".join(hashlib.sha256(b).digest() for b in encoded)).digest()
        answer = await self._start(fn, ti.name, args, memo_key=(fn.prefix.comps, digest), signer=signer,
                                   future=future)
        return answer if kx is None else self._grant(answer, kx, principal, pub)

    def _grant(self, answer: Data, kx: bytes, principal: Name, public_key: bytes) -> Data:
        """Wrap `answer` in a GRANT of a new session for `principal` (`HostSessions.grant`);
        the plain answer if none could be made."""
        granted = self.sessions.grant(kx, principal, public_key, trio.current_time())
        if granted is None:  # a degenerate public key: no session, the plain answer
            return answer
        sid, host_kx = granted
        self.counters["fn_sessions_granted"] += 1
        body = msgpack.packb({"sid": sid, "kx": host_kx, "ttl_ms": int(SESSION_TTL * 1000),
                              "type": answer.content_type, "content": answer.content}, use_bin_type=True)
        return self.ep.sign(Data(answer.name, body, ContentType.GRANT, answer.freshness_ms))

    @staticmethod
    def _check_proof(key_name: Name, pub: bytes, sig: bytes, message: bytes, ts: int) -> Name | None:
        """The caller's key name if `sig` by `pub` over `message` is valid, the
        key name commits to `pub`, and the caller's clock is within
        `MAX_CLOCK_SKEW` of ours."""
        if not _fresh(ts):
            return None
        if len(key_name) < 2 or bytes(key_name[-2]) != b"KEY":
            return None
        if bytes(key_name[-1]) != hashlib.sha256(pub).digest()[:KEY_ID_LEN]:
            return None
        try:
            ok = _verify_key(pub).is_valid(message, sig)
        except Exception:
            return None
        return key_name if ok else None

    @staticmethod
    def _args_digest(plan: ArgumentPlan) -> bytes:
        """The memo key of a call's arguments: a digest over their segment digests
        (each argument was checked against them as it was pulled)."""
        h = hashlib.sha256()
        for _, digests in plan["args"]:
            h.update(digests)
        return h.digest()

    def _check_auth(self, auth: Data, ti: Interest) -> tuple[Name, bytes, bytes | None] | None:
        """(the caller's key name, its public key, the certificate it sent if
        any) if `auth` is a valid, fresh proof for this trigger."""
        try:
            body = msgpack.unpackb(auth.content, raw=False)
            pub, ti_uri, cert = body["pub"], body["ti"], body.get("cert")
            if cert is not None and not isinstance(cert, bytes):
                return None
            kl = auth.key_locator
            if ti_uri != ti.name.to_uri() or kl is None or len(kl) < 2 or bytes(kl[-2]) != b"KEY":
                return None
            if bytes(kl[-1]) != hashlib.sha256(pub).digest()[:KEY_ID_LEN]:
                return None  # the key name must commit to the public key
            verifier = _verify_key(pub)
            if not verifier.verifies(signed_portion_of_wire(auth), auth.sig_value):
                return None
            return kl, pub, cert
        except Exception:
            return None

    def _check_manifest(self, data: Data) -> ArgumentPlan:
        """The caller's argument manifest, checked; `ArgumentsRefused` says why not."""
        try:
            body = msgpack.unpackb(data.content, raw=False)
            segment_size = body["segment_size"]
            args = [(a["size"], a["digests"]) for a in body["args"]]
            future = body.get("future", False)
            if type(future) is not bool:
                raise ValueError
        except Exception:
            raise ArgumentsRefused("bad-arguments", "malformed argument manifest") from None
        if len(args) > MAX_ARGS:
            raise ArgumentsRefused("too-large", f"{len(args)} arguments exceed the limit of {MAX_ARGS}")
        total = sum(size for size, _ in args)
        if total > self.limits.max_arg_bytes:
            raise ArgumentsRefused(
                "too-large", f"{total} bytes of arguments exceed the host's limit of {self.limits.max_arg_bytes}")
        for size, digests in args:
            try:
                Manifest(Name("/x"), 0, size, segment_size, digests)  # validates sizes and digest count
            except ValueError as exc:
                raise ArgumentsRefused("bad-arguments", str(exc)) from None
        return {"segment_size": segment_size, "args": args, "future": future}

    async def _admits(self, fn: HostedFunction, principal: Name | None, public_key: bytes | None = None,
                      cert: bytes | None = None) -> str | None:
        """The one policy every call passes, whatever its form (signed, by
        session, pure), before anything (the memo included) answers it: None
        if admitted, else why not.  `principal` is the caller's proven key name
        (`public_key` its key; `cert` the certificate the call carried, if
        any), None for an anonymous call (a ``params-sha256=`` pure call
        carries no proof).  An anonymous call is admitted only by a function
        without an allow list: a host with an allow list answers only proven
        callers, each under its own call's name, so no result of it is ever
        cacheable by a name anyone may ask for (and a caller it may refuse
        learns nothing about the function, not even whether it is pure).  A
        proven caller's key name must match the allow list (name prefixes or
        schema patterns) and, when the host's validator has a trust schema,
        its certificate chain must reach an anchor, every certificate valid
        now.  The reason goes to the caller: it names the caller and the
        function, never the host's files (a chain's refusal names the schema
        by its path: that stays in the host's log)."""
        if principal is None:
            if not fn.allow:
                return None
            return (f"{fn.prefix} admits only proven callers: call it signed (a params-sha256 name alone "
                    "proves no caller)")
        if not fn.allows(principal):
            return f"{principal} may not call {fn.prefix}"
        validator = self.validator
        if validator is None or validator.schema is None:
            return None
        if public_key is None:
            return f"{principal}: no public key to check"
        if cert is not None:
            self._offer(validator, principal, public_key, cert)
        try:
            await validator.validate_key(principal, public_key, self._fetch_cert)
        except VerificationError as exc:
            log.debug("refused a call of %s by %s: %s", fn.prefix, principal, exc)
            why = str(exc).replace(validator.schema.source, "the host's trust schema")
            return f"{principal} may not call {fn.prefix}: {why}"
        return None

    @staticmethod
    def _offer(validator: Validator, principal: Name, public_key: bytes, wire: bytes) -> None:
        """Hand the validator the certificate a call carried (checked when used,
        like a fetched one); one for another key, or malformed, is ignored."""
        try:
            cert: Certificate = certificate_from_bytes(wire, "the caller's certificate")
        except CertificateError:
            return
        if cert.key_name == principal and cert.public_key == public_key:
            validator.offer([cert])

    async def _fetch_key(self, key_name: Name) -> Data:
        """A certificate by key name, through the endpoint (the default `fetch_cert`)."""
        return await self.ep.fetch_key(key_name, timeout=2.0)

    async def _pure_call(self, fn: HostedFunction, interest: Interest) -> Data | Nack | None:
        """An anonymous ``/fn/NAME/params-sha256=<d>`` call: the policy first
        (before anything about the function is told, its purity included),
        then purity, then the memo, then admission like any call."""
        refusal = await self._admits(fn, None)
        if refusal is not None:
            self.counters["fn_unauthorized"] += 1
            return self._error(interest.name, "unauthorized", refusal)
        if not fn.info.pure:
            self.counters["fn_bad_calls"] += 1
            return self._error(interest.name, "not-pure", f"{fn.prefix} is not a pure function")
        key: CallKey = (fn.prefix.comps, interest.name.comps[-1])
        memo = self._memo_get(key)
        if memo is not None:
            return self._result_data(interest.name, memo, fn.info.freshness_ms)
        try:
            encoded = msgpack.unpackb(interest.app_params, raw=False, max_array_len=MAX_ARGS)
            if not isinstance(encoded, list) or not all(isinstance(b, bytes) for b in encoded):
                raise ValueError("arguments are not a list of encoded values")
            args = [decode_value(b) for b in encoded]
        except Exception as exc:
            self.counters["fn_bad_calls"] += 1
            return self._error(interest.name, "bad-arguments", f"{interest.name}: {exc}")
        if self.active >= self.limits.max_jobs:
            self.counters["fn_busy"] += 1
            return Nack.for_interest(interest, NackReason.NO_RESOURCES, f"{self.node_name} is busy")
        self._admit(fn, +1)
        try:
            return await self._start(fn, interest.name, args, memo_key=key, pure_name=True)
        finally:
            self._admit(fn, -1)

    # --- the memo of pure results (bounded in entries and bytes, least recently used dropped) ---
    def _memo_get(self, key: CallKey) -> bytes | None:
        result = self._memo.get(key)
        if result is not None:
            self._memo.move_to_end(key)
        return result

    def _memo_put(self, key: CallKey, result: bytes) -> None:
        old = self._memo.pop(key, None)
        if old is not None:
            self._memo_bytes -= len(old)
        if len(result) > self.limits.max_memo_bytes:  # never kept: it would evict everything
            self.counters["fn_memo_evictions"] += 1
            return
        self._memo[key] = result
        self._memo_bytes += len(result)
        while len(self._memo) > self.limits.max_tombstones or self._memo_bytes > self.limits.max_memo_bytes:
            self._memo_bytes -= len(self._memo.popitem(last=False)[1])
            self.counters["fn_memo_evictions"] += 1

    # --- running -----------------------------------------------------------------------------
    async def _start(self, fn: HostedFunction, name: Name, args: list[Any], *, memo_key: CallKey,
                     pure_name: bool = False, signer: SigningKey | None = None, future: bool = False) -> Data:
        """Run the call (or answer from the memo); the trigger's answer,
        signed by `signer` (a session's key) or the host's key.  A call with
        named arguments fetches them first, as part of its job (so a long
        fetch is answered with a thunk like long work), and is memoized by
        their implicit digests (`_run_job`).  A submitted call (`future`) is
        answered with a thunk at once, its result stored under the thunk's
        name whatever its size."""
        named = any(isinstance(a, NamedArg) for a in args)
        memo = self._memo_get(memo_key) if fn.info.pure and not named else None
        if memo is not None and not future:  # (every path here checked the caller against the policy first)
            return self._result_data(name, memo, fn.info.freshness_ms if pure_name else 0, signer)
        job = Job(trio.current_time())
        assert self._nursery is not None
        if memo is not None:  # a submitted call the memo answers: stored under its own name all the same
            job.result = memo
            job.done.set()
        else:
            if not named:  # (one with named arguments counts once they are fetched and the memo missed)
                self.counters["fn_executions"] += 1
            self._running[fn.prefix] = self._running.get(fn.prefix, 0) + 1
            self._load_changed.set()
            if fn.is_async or self.processes is not None or named:
                self._nursery.start_soon(self._run_job, fn, args, job, memo_key)
            else:  # a worker thread; encoding the result there too
                self.threads.submit(lambda: encode_value(fn.fn(*args)),
                                    lambda outcome: self._job_done(fn, job, memo_key, *_result_or_error(outcome)))
            if not future:
                with trio.move_on_after(INLINE_BUDGET):  # cancelled: nobody knows the job; it ends unseen
                    await job.done.wait()
        if not future and job.done.is_set() and (job.error is not None or len(job.result or b"") <= INLINE_MAX):
            if job.error is not None:
                return self._error(name, *job.error, signer)
            return self._result_data(name, job.result or b"", fn.info.freshness_ms if pure_name else 0, signer)
        self.results.hand_out(job)
        if job.done.is_set():  # finished, but too large to come back inline (or submitted)
            if job.error is None:
                self._nursery.start_soon(self.results.publish_and_retain, job)
            else:
                self.results.retain(job)
                job.stored.set()
            return self._thunk(name, job, 0.0, signer)
        return self._thunk(name, job, max(0.05, 2 * (trio.current_time() - job.started)), signer)

    async def _run_job(self, fn: HostedFunction, args: list[Any], job: Job, memo_key: CallKey) -> None:
        """An async function in the loop, a sync one in a worker process (or,
        when it has named arguments, in a worker thread), its named arguments
        fetched first."""
        held: list[int] = []  # bytes of named arguments this job holds (given back when it ends)
        try:
            if any(isinstance(a, NamedArg) for a in args):
                args, digests = await self._resolve(args, held)
                # the call's own key (its encoded arguments, the refs' names among them) and the exact
                # bytes every name brought: a name that comes to mean other bytes never hits the memo
                memo_key = (memo_key[0], hashlib.sha256(memo_key[1] + b"".join(digests)).digest())
                memo = self._memo_get(memo_key) if fn.info.pure else None
                if memo is not None:
                    self._job_done(fn, job, memo_key, memo, None)
                    return
                self.counters["fn_executions"] += 1
            if fn.is_async:
                result = encode_value(await fn.fn(*args))
            elif self.processes is not None:
                assert fn.target is not None  # checked in __init__
                result = await self.processes.run(fn.target, args)
            else:
                result = await self._in_thread(fn, args)
        except _RefUnavailable as exc:
            self._job_done(fn, job, memo_key, None, ("bad-ref", str(exc)))
        except WorkerError as exc:  # raised in a worker process (or the worker died)
            self._job_done(fn, job, memo_key, None, (exc.type_name, exc.message))
        except trio.Cancelled:
            raise
        except BaseException as exc:  # the function failed (even SystemExit): the caller gets a signed error
            self._job_done(fn, job, memo_key, None, (type(exc).__name__, str(exc)))
        else:
            self._job_done(fn, job, memo_key, result, None)
        finally:
            self.ref_bytes.give(sum(held))

    async def _in_thread(self, fn: HostedFunction, args: list[Any]) -> bytes:
        """`fn(*args)`, encoded, in one of the host's worker threads."""
        done = trio.Event()
        outcome: list[Outcome] = []

        def finished(result: Outcome) -> None:
            outcome.append(result)
            done.set()

        self.threads.submit(lambda: encode_value(fn.fn(*args)), finished)
        await done.wait()
        encoded, error = _result_or_error(outcome[0])
        if error is not None:
            raise WorkerError(*error)
        assert encoded is not None
        return encoded

    async def _resolve(self, args: list[Any], held: list[int]) -> tuple[list[Any], list[bytes]]:
        """The call's arguments with each named one fetched by this host
        (`icnd.compute.resolve`: verified under its validator, bounded by
        `HostLimits.max_ref_bytes` and `ref_timeout`; a future's result once
        its host has stored it), and the implicit digest of each named one
        (its exact bytes, never its name).  `_RefUnavailable` names the one
        that could not be fetched.  Each fetch first takes its size from the
        host's `ByteBudget` (appended to `held`, given back by the caller
        when the job ends)."""
        limits = self.limits

        async def reserve(size: int) -> None:
            await self.ref_bytes.take(size)
            held.append(size)

        deadline = trio.current_time() + limits.ref_timeout
        values: list[Any] = []
        digests: list[bytes] = []
        for index, arg in enumerate(args):
            if not isinstance(arg, NamedArg):
                values.append(arg)
                continue
            what = f"argument {index} ({'Future' if arg.kind == 'future' else 'Ref'} {arg.name})"
            try:
                with trio.fail_at(deadline):
                    if arg.kind == "future":
                        await await_stored(self.ep, arg.name, deadline)
                    value, digest = await fetch_ref(self.ep, arg.name, max_bytes=limits.max_ref_bytes,
                                                    deadline=deadline, reserve=reserve)
            except trio.TooSlowError:
                raise _RefUnavailable(f"{what}: not fetched within the host's {limits.ref_timeout:g}s") from None
            except VerificationError as exc:
                self.counters["fn_refs_refused"] += 1
                raise _RefUnavailable(f"{what}: refused by this host's validator: {exc}") from None
            except (Error, ValueError) as exc:
                raise _RefUnavailable(f"{what}: {exc}") from None
            self.counters["fn_refs_fetched"] += 1
            values.append(value)
            digests.append(digest)
        return values, digests

    def _job_done(self, fn: HostedFunction, job: Job, memo_key: CallKey, result: bytes | None,
                  error: tuple[str, str] | None) -> None:
        """A job finished (in the trio thread, with no await since: see `_start`)."""
        self._running[fn.prefix] -= 1
        self._load_changed.set()
        job.result, job.error = result, error
        if result is not None and fn.info.pure:  # (a result, or an error: never both)
            self._memo_put(memo_key, result)
        job.done.set()
        if not job.thunked or self.closed:
            return  # `_start` answers inline or hands out a thunk (or, cancelled, nobody waits)
        assert self._nursery is not None
        if error is None:  # the caller holds a thunk: store the result as an object first
            self._nursery.start_soon(self.results.publish_and_retain, job)
        else:
            self.results.retain(job)
            job.stored.set()

    async def _on_poll(self, interest: Interest) -> Data | None:
        """A poll of a thunk's name.  While the job runs the poll is *held*
        (up to `POLL_HOLD`, and a margin short of the Interest's lifetime) and
        answered as soon as the result is stored or failed, so a caller -- or
        a host waiting for a future -- learns of the end within a round trip
        rather than at its next poll; at most `MAX_HELD_POLLS` are held at
        once (more are answered at once, with the ETA)."""
        comps = interest.name.comps
        if len(comps) <= len(self.thunk_prefix.comps):
            return None
        thunk_id = comps[len(self.thunk_prefix.comps)][1:].decode("ascii", "replace")
        job = self.results.get(thunk_id)
        if job is None:
            if self.results.is_gone(thunk_id):
                return self._error(interest.name, "gone", f"the result of {thunk_id} is no longer kept")
            return self._error(interest.name, "unknown-thunk", f"no result named {thunk_id} here")
        hold = min(POLL_HOLD, interest.lifetime_ms / 1000 - POLL_HOLD_MARGIN)
        if job.error is None and not job.published and hold > 0 and self._held_polls < MAX_HELD_POLLS:
            self._held_polls += 1
            try:
                with trio.move_on_after(hold):
                    await job.stored.wait()
            finally:
                self._held_polls -= 1
        if job.error is not None:
            return self._error(interest.name, *job.error)
        eta = max(0.05, min(MAX_POLL_WAIT, trio.current_time() - job.started))
        if job.published:
            eta = 0.0  # stored: a new Interest will reach the object
        elif hold > 0:
            eta = 0.05  # (held already: ask again soon, to be held again)
        return self._thunk(interest.name, job, eta)

    # --- answers (signed by the host's key, or MACed with `signer`, a session's) --------------
    def _sign(self, data: Data, signer: SigningKey | None) -> Data:
        return self.ep.sign(data) if signer is None else signer.sign(data)

    def _thunk(self, name: Name, job: Job, eta: float, signer: SigningKey | None = None) -> Data:
        body = msgpack.packb({"name": self.results.name_of(job).to_uri(),
                              "eta_ms": int(eta * 1000), "expires_ms": int(self.limits.retention * 1000)})
        return self._sign(Data(name, body, ContentType.THUNK, 0), signer)

    def _result_data(self, name: Name, result: bytes, freshness_ms: int, signer: SigningKey | None = None) -> Data:
        return self._sign(Data(name, result, ContentType.BLOB, freshness_ms), signer)

    def _error(self, name: Name, code: str, message: str, signer: SigningKey | None = None) -> Data:
        return self._sign(error_data(name, code, message[:MAX_ERROR_MESSAGE]), signer)
