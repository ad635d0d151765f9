"""The validator: the one place anything in icnd decides whether to believe a Data.

`Validator.validate(data, fetch)` accepts a Data or raises
`icnd.VerificationError` naming the Data, the rule (or "no rule matches")
and the broken link.  It is used by clients (`fetch`, objects, reductions,
call answers) and by nodes (function callers, group descriptors,
contributions; link state).  It does no I/O of its own: certificates it does
not hold are asked of `fetch` (an async callable the caller supplies: the
client's or the node's way of expressing an Interest), and the time is
`clock()`, a callable the caller supplies too (seconds since the epoch:
``time.time`` in clients and daemons, a fixed or virtual time in tests and
simulations), since certificate validity is a matter of wall-clock time and
this package reads no clock.

**With a trust schema** (`icnd.trust.schema.Schema`), a Data is accepted
only if

1. it is signed (Ed25519; a DigestSha256 Data is refused: nothing names
   who made it), unless the caller says something else vouches for it
   (`vouched=True`: its implicit digest was in the Interest's name, or a
   verified manifest lists it);
2. a rule's ``data`` pattern matches its name and the rule's ``signer``
   pattern matches its key locator with the same captures;
3. the signature verifies with the key its key locator names, and
4. that key is an anchor's, or has a certificate -- valid now -- that is
   itself accepted by 2-4 (signed by a key a rule allows for the
   certificate's name), and so on until an anchor: at most `max_depth`
   certificates, at most `max_fetches` fetched per validation, no key
   twice (a loop).

A key whose chain was checked is remembered (`cache_entries` keys, by key
name, with the certificate's digest) until the earliest end of validity on
its chain or `cache_ttl`, whichever comes first, so a segmented object or a
stream of answers from one producer costs one chain walk.

**Without a schema** (integrity only, documented as such): an Ed25519 Data
must verify with the key its locator names (known locally, or fetched by
name once: a certificate or a bare key, *not* checked against any anchor);
an HMAC Data with a key in the key chain; a DigestSha256 Data only when
vouched for.  This catches corruption and stale or mismatched keys, never a
forger who also serves the key.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable

from icnd.codec import implicit_digest
from icnd.errors import Error, NotFound, VerificationError
from icnd.name import Name
from icnd.packet import ContentType, Data, SigType
from icnd.security import Ed25519VerifyKey, KeyChain, VerifyKey, verify_with

from icnd.trust.cert import Certificate, CertificateError, key_name_of, parse_certificate, parse_key_data
from icnd.trust.schema import Pattern, Schema

FetchCert = Callable[[Name], Awaitable[Data]]  # the Data for a key name (CanBePrefix); raises icnd.Error

MAX_DEPTH = 4  # certificates between a Data and its anchor
MAX_FETCHES = 6  # certificates fetched for one validation
CACHE_ENTRIES = 1024
CACHE_TTL = 3600.0
_NO_KEYS = KeyChain()  # checks what needs no key: digests, and says why other signatures fail
OFFERED_ENTRIES = 256  # certificates handed over (bundles, own, clients') kept to look up by key name


@dataclass
class _Trusted:
    key: VerifyKey
    until: float  # seconds since the epoch: the earliest end of validity on the chain, or the cache TTL
    cert_digest: bytes | None  # None for an anchor or a key known locally
    rule: str


class Validator:
    """Decides whom to believe; see the module docstring for the rules."""

    def __init__(self, schema: Schema | None = None, keychain: KeyChain | None = None, *,
                 clock: Callable[[], float],
                 max_depth: int = MAX_DEPTH, max_fetches: int = MAX_FETCHES, cache_entries: int = CACHE_ENTRIES,
                 cache_ttl: float = CACHE_TTL) -> None:
        self.schema = schema
        self.keychain = keychain or KeyChain()
        self.max_depth = max_depth
        self.max_fetches = max_fetches
        self.cache_ttl = cache_ttl
        self.clock = clock
        self._cache_entries = cache_entries
        self._trusted: OrderedDict[Name, _Trusted] = OrderedDict()
        self._offered: OrderedDict[Name, Certificate] = OrderedDict()
        self.counters = {"validated": 0, "refused": 0, "chain_walks": 0, "certs_fetched": 0, "cache_hits": 0}

    # --- what the validator may use without fetching -----------------------------------
    def offer(self, certs: Iterable[Certificate]) -> None:
        """Certificates that may be used to build chains (not trusted by
        themselves: each is checked like a fetched one when used)."""
        for cert in certs:
            self._offered[cert.key_name] = cert
            self._offered.move_to_end(cert.key_name)
            while len(self._offered) > OFFERED_ENTRIES:
                self._offered.popitem(last=False)

    def certificates(self) -> list[Certificate]:
        """The anchors and offered certificates (what a node can serve)."""
        anchors = self.schema.anchors if self.schema is not None else []
        return [*anchors, *self._offered.values()]

    def forget(self) -> None:
        """Drop every cached chain (e.g. after the schema changed)."""
        self._trusted.clear()

    # --- deciding -----------------------------------------------------------------------
    async def validate(self, data: Data, fetch: FetchCert | None = None, *, vouched: bool = False) -> str:
        """Accept `data` or raise VerificationError; returns the accepting rule's
        name (``"integrity"`` without a schema, ``"vouched"`` for a vouched digest)."""
        try:
            rule = await self._validate(data, fetch, vouched)
        except VerificationError:
            self.counters["refused"] += 1
            raise
        self.counters["validated"] += 1
        return rule

    async def _validate(self, data: Data, fetch: FetchCert | None, vouched: bool) -> str:
        sig_type = data.sig_type
        if sig_type == SigType.DIGEST_SHA256:
            if not vouched:
                why = ("a trust schema accepts only signed Data" if self.schema is not None
                       else "nothing vouches for it (no signed manifest lists it, no implicit digest names it)")
                raise VerificationError(f"{data.name}: digest-only Data (no signer): {why}")
            _NO_KEYS.verify(data)  # the digest itself must match
            return "vouched"
        locator = data.key_locator
        if sig_type == SigType.HMAC_SHA256:
            # a shared secret known here (e.g. a RICE session): proof enough of who holds it
            if locator is None or self.keychain.verify_key(locator) is None:
                raise VerificationError(f"{data.name}: HMAC signature by {locator}, a key not known here")
            self.keychain.verify(data)
            return "hmac"
        if sig_type != SigType.ED25519 or locator is None:
            _NO_KEYS.verify(data)  # raises the precise complaint (unknown type, no locator)
            raise VerificationError(f"{data.name}: unsupported signature")
        if self.schema is None:
            key = await self._integrity_key(data, locator, fetch)
            verify_with(data, key)
            return "integrity"
        rule = self.schema.accepting(data.name, locator)
        if rule is None:
            raise VerificationError(f"{data.name}: signed by {locator}: {self.schema.refusal(data.name, locator)}")
        budget = [self.max_fetches]
        try:
            trusted = await self._chain(locator, fetch, 1, (), budget, data.name)
            verify_with(data, trusted.key)
        except VerificationError as exc:
            raise VerificationError(f"{exc} (rule {rule.name!r})") from None
        return rule.name

    def validate_carried(self, data: Data, carried: Iterable[Data]) -> str:
        """`validate`, with certificates taken only from `carried` (the chain a
        Data brings along, e.g. a link-state record: what routes would be
        needed to fetch is what it is for) and from what the validator holds.

        Nothing in it waits for I/O, so it returns (or raises
        VerificationError) synchronously, for sans-IO callers.  Carried
        certificates are checked like fetched ones and are not kept as offers."""
        bundle: dict[Name, Data] = {}
        for cert in carried:
            key = key_name_of(cert.name)
            if key is not None:
                bundle[key] = cert

        async def from_bundle(key: Name) -> Data:
            cert = bundle.get(key)
            if cert is None:
                raise NotFound(f"{data.name} does not carry a certificate of {key}")
            return cert

        coroutine = self.validate(data, from_bundle)
        try:
            coroutine.send(None)
        except StopIteration as done:
            return str(done.value)
        coroutine.close()
        raise RuntimeError("validate_carried: the validator waited for I/O")  # nothing in it does

    async def validate_key(self, key: Name, public_key: bytes, fetch: FetchCert | None = None) -> str:
        """Accept that `public_key` is the key named `key` (e.g. a caller's, who
        proved holding it): with a schema, only if its certificate chain
        reaches an anchor; without one, always (integrity only).
        Raises VerificationError."""
        if self.schema is None:
            return "integrity"
        try:
            trusted = await self._chain(key, fetch, 1, (), [self.max_fetches], key)
        except VerificationError:
            self.counters["refused"] += 1
            raise
        if not isinstance(trusted.key, Ed25519VerifyKey) or trusted.key.public_bytes() != bytes(public_key):
            self.counters["refused"] += 1
            raise VerificationError(f"{key}: the key presented is not the one its certificate certifies")
        self.counters["validated"] += 1
        return trusted.rule

    # --- chains -------------------------------------------------------------------------
    async def _chain(self, key: Name, fetch: FetchCert | None, depth: int, seen: tuple[Name, ...],
                     budget: list[int], subject: Name) -> _Trusted:
        """The trusted key named `key` (anchor, cached chain, or a chain built now)."""
        assert self.schema is not None
        now = self.clock()
        anchor = self.schema.anchor(key)
        if anchor is not None:
            problem = anchor.validity_problem(now)
            if problem:
                raise VerificationError(f"{subject}: trust anchor {anchor.name} is {problem}")
            return _Trusted(anchor.verify_key(), anchor.not_after_ms / 1000.0, None, "anchor")
        cached = self._trusted.get(key)
        if cached is not None:
            if cached.until >= now:
                self._trusted.move_to_end(key)
                self.counters["cache_hits"] += 1
                return cached
            del self._trusted[key]
        if key in seen:
            raise VerificationError(f"{subject}: certificate chain loops at {key}")
        if depth > self.max_depth:
            raise VerificationError(f"{subject}: certificate chain deeper than {self.max_depth} at {key}")
        self.counters["chain_walks"] += 1
        cert = await self._certificate(key, fetch, budget, subject)
        problem = cert.validity_problem(now)
        if problem:
            raise VerificationError(f"{subject}: certificate {cert.name} is {problem}")
        signer = cert.signer
        assert signer is not None  # parse_certificate checked
        if cert.self_signed:
            raise VerificationError(f"{subject}: {cert.name} is self-signed and not a trust anchor of "
                                    f"{self.schema.source}")
        rule = self.schema.accepting(cert.name, signer)
        if rule is None:
            raise VerificationError(f"{subject}: certificate {cert.name} signed by {signer}: "
                                    f"{self.schema.refusal(cert.name, signer)}")
        issuer = await self._chain(signer, fetch, depth + 1, seen + (key,), budget, subject)
        try:
            verify_with(cert.data, issuer.key)
        except VerificationError as exc:
            raise VerificationError(f"{subject}: certificate {cert.name}: {exc}") from None
        trusted = _Trusted(cert.verify_key(), min(cert.not_after_ms / 1000.0, issuer.until, now + self.cache_ttl),
                           cert.digest, rule.name)
        self._trusted[key] = trusted
        while len(self._trusted) > self._cache_entries:
            self._trusted.popitem(last=False)
        return trusted

    async def _certificate(self, key: Name, fetch: FetchCert | None, budget: list[int], subject: Name) -> Certificate:
        offered = self._offered.get(key)
        if offered is not None and offered.valid_at(self.clock()):
            return offered
        if fetch is None:
            raise VerificationError(f"{subject}: no certificate of {key} at hand")
        if budget[0] <= 0:
            raise VerificationError(f"{subject}: more than {self.max_fetches} certificates to fetch at {key}")
        budget[0] -= 1
        self.counters["certs_fetched"] += 1
        try:
            data = await fetch(key)
        except Error as exc:
            raise VerificationError(f"{subject}: cannot retrieve the certificate of {key} ({exc})") from None
        if key_name_of(data.name) != key:
            raise VerificationError(f"{subject}: asked for a certificate of {key}, got {data.name}")
        try:
            return parse_certificate(data)
        except CertificateError as exc:
            raise VerificationError(f"{subject}: {exc}") from None

    async def _integrity_key(self, data: Data, locator: Name, fetch: FetchCert | None) -> VerifyKey:
        known = self.keychain.verify_key(locator)
        if known is not None:
            return known
        offered = self._offered.get(locator)
        if offered is not None:
            return offered.verify_key()
        cached = self._trusted.get(locator)
        if cached is not None and cached.until >= self.clock():
            return cached.key
        if fetch is None:
            raise VerificationError(f"{data.name}: signed by unknown key {locator}")
        self.counters["certs_fetched"] += 1
        try:
            key_data = await fetch(locator)
        except Error as exc:
            raise VerificationError(f"{data.name}: cannot retrieve its signing key {locator} ({exc}); "
                                    "is there a route to the signer's prefix?") from None
        cert_of = key_name_of(key_data.name)
        if (key_data.content_type != ContentType.KEY or not locator.is_prefix_of(key_data.name)
                or (cert_of is not None and cert_of != locator)):
            raise VerificationError(f"{data.name}: {key_data.name} is not a key named {locator}")
        try:
            key = Ed25519VerifyKey.from_bytes(parse_key_data(key_data))
        except (CertificateError, ValueError) as exc:
            raise VerificationError(f"{data.name}: {locator} is not an Ed25519 public key ({exc})") from None
        self._trusted[locator] = _Trusted(key, self.clock() + self.cache_ttl, implicit_digest(key_data), "integrity")
        while len(self._trusted) > self._cache_entries:
            self._trusted.popitem(last=False)
        return key


@functools.lru_cache(maxsize=256)
def _allow_entry(entry: str) -> Pattern | Name:
    return Pattern.parse(entry) if "<" in entry else Name(entry)


def caller_allowed(allow: Iterable[str | Pattern | Name], key: Name) -> bool:
    """True if a caller's key name matches one entry of a function's `allow`
    list: a schema pattern (``/net/<user>/KEY/<*>``) or a name prefix.
    Entries given as text are compiled once (cached); a malformed one raises
    ValueError (policies are checked when loaded)."""
    for entry in allow:
        compiled = _allow_entry(entry) if isinstance(entry, str) else entry
        if isinstance(compiled, Pattern):
            if compiled.match(key) is not None:
                return True
        elif compiled.is_prefix_of(key):
            return True
    return False
