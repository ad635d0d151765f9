"""The validator, one test per rule of issue #16 (icnd.trust.validator).

Time is explicit (`Clock`), certificates come from an in-memory `Net` that
counts what it is asked for, so each test says exactly what was fetched."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import trio

import icnd
from icnd.codec import implicit_digest
from icnd.keyfiles import load_schema
from icnd.name import Name
from icnd.packet import ContentType, Data, SigType
from icnd.security import Ed25519Key, HmacKey, KeyChain, make_data
from icnd.trust.cert import Certificate, issue, make_certificate, self_signed
from icnd.trust.schema import Pattern, Rule, Schema
from icnd.trust.validator import Validator, caller_allowed

from ._pki import DAY, USER_SCHEMA, T, anchor, certified, key, write_schema


class Clock:
    def __init__(self, now: float = T) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Net:
    """Certificates by key name, as a node would answer an Interest for the key name."""

    def __init__(self, *items: Certificate | Data) -> None:
        self.store: dict[Name, Data] = {}
        self.calls: list[Name] = []
        for item in items:
            self.add(item)

    def add(self, item: Certificate | Data, under: Name | None = None) -> None:
        if isinstance(item, Certificate):
            self.store[under if under is not None else item.key_name] = item.data
        else:
            self.store[under if under is not None else item.name] = item

    async def __call__(self, key_name: Name) -> Data:
        self.calls.append(key_name)
        await trio.lowlevel.checkpoint()
        try:
            return self.store[key_name]
        except KeyError:
            raise icnd.Error(f"no route to {key_name}") from None


def signed(k: Ed25519Key, uri: str, content: bytes = b"hello") -> Data:
    return make_data(uri, content, key=k)


@dataclasses.dataclass
class Pki:
    anchor_key: Ed25519Key
    anchor_cert: Certificate
    schema: Schema
    alice: Ed25519Key
    alice_cert: Certificate
    bob: Ed25519Key
    bob_cert: Certificate
    clock: Clock

    def validator(self, **kw) -> Validator:
        return Validator(self.schema, clock=self.clock, **kw)

    def net(self) -> Net:
        return Net(self.alice_cert, self.bob_cert, self.anchor_cert)


@pytest.fixture
def pki(tmp_path) -> Pki:
    akey, acert = anchor("/net", now=T - 10 * DAY, days=365)
    alice, alice_cert = certified("/net/alice", akey, now=T - DAY, days=30)
    bob, bob_cert = certified("/net/bob", akey, now=T - DAY, days=30)
    schema = load_schema(write_schema(tmp_path, USER_SCHEMA, {"anchor.cert": acert}))
    return Pki(akey, acert, schema, alice, alice_cert, bob, bob_cert, Clock())


async def refused(v: Validator, data: Data, fetch=None, **kw) -> str:
    with trio.fail_after(5):  # never hangs
        with pytest.raises(icnd.VerificationError) as err:
            await v.validate(data, fetch, **kw)
    message = str(err.value)
    assert message.startswith(f"{data.name}: "), message  # names the Data
    return message


def permissive_schema(acert: Certificate) -> Schema:
    return Schema([Rule("any", Pattern.parse("/<**>"), Pattern.parse("/<**>"))], [acert], "permissive.toml")


# --- the rules of the acceptance list ------------------------------------------------------------


async def test_right_signer_accepted(pki):
    net = pki.net()
    v = pki.validator()
    assert await v.validate(signed(pki.alice, "/net/alice/doc/seg=0"), net) == "user-data"
    assert net.calls == [pki.alice.name]  # its certificate, once; the anchor is local
    assert v.counters["validated"] == 1 and v.counters["refused"] == 0


async def test_anchor_may_sign_directly_when_a_rule_allows(pki):
    v = pki.validator()
    cert = issue(pki.anchor_key, key("/net/carol"), now=T)
    assert await v.validate(cert.data, Net()) == "user-certs"  # a certificate is Data like any other


async def test_user_signing_in_another_users_namespace_rejected(pki):
    net = pki.net()
    v = pki.validator()
    message = await refused(v, signed(pki.alice, "/net/bob/doc"), net)
    assert (f"signed by {pki.alice.name}: rule 'user-data' wants a signer matching /net/<user>/KEY/<*> "
            f"with user=bob, not {pki.alice.name}") in message
    assert net.calls == []  # refused before any fetch
    assert v.counters["refused"] == 1


async def test_no_rule_matches(pki):
    message = await refused(pki.validator(), signed(pki.alice, "/elsewhere/doc"), pki.net())
    assert "no rule matches" in message


async def test_key_certified_by_unknown_anchor_rejected(pki):
    rogue_key, rogue_cert = anchor("/net", now=T - DAY)  # another "/net" anchor, not the schema's
    mallory, mallory_cert = certified("/net/alice", rogue_key)  # claims alice's namespace
    net = Net(mallory_cert, rogue_cert)
    message = await refused(pki.validator(), signed(mallory, "/net/alice/doc"), net)
    assert f"{rogue_cert.name} is self-signed and not a trust anchor of {pki.schema.source}" in message
    assert "(rule 'user-data')" in message
    # and when the rogue anchor cannot even be found
    message = await refused(pki.validator(), signed(mallory, "/net/alice/doc"), Net(mallory_cert))
    assert f"cannot retrieve the certificate of {rogue_key.name}" in message


async def test_expired_certificate_rejected(pki):
    old, old_cert = certified("/net/alice", pki.anchor_key, now=T - 40 * DAY, days=30)
    message = await refused(pki.validator(), signed(old, "/net/alice/doc"), Net(old_cert))
    assert f"certificate {old_cert.name} is expired at" in message and "(rule 'user-data')" in message


async def test_not_yet_valid_certificate_rejected(pki):
    early, early_cert = certified("/net/alice", pki.anchor_key, now=T + DAY, days=30)
    message = await refused(pki.validator(), signed(early, "/net/alice/doc"), Net(early_cert))
    assert f"certificate {early_cert.name} is not valid before" in message


@pytest.mark.parametrize("start,why", [(T - 400 * DAY, "expired at"), (T + DAY, "not valid before")])
async def test_anchor_outside_validity_rejected(tmp_path, start, why):
    akey, acert = anchor("/net", now=start, days=365)
    alice, alice_cert = certified("/net/alice", akey, now=T - DAY)
    schema = load_schema(write_schema(tmp_path, USER_SCHEMA, {"anchor.cert": acert}))
    message = await refused(Validator(schema, clock=Clock()), signed(alice, "/net/alice/doc"), Net(alice_cert))
    assert f"trust anchor {acert.name} is {why}" in message


async def test_chain_loop_rejected(pki):
    a, b = key("/net/a"), key("/net/b")
    a_by_b = issue(b, a, now=T - DAY)
    b_by_a = issue(a, b, now=T - DAY)
    net = Net(a_by_b, b_by_a)
    v = Validator(permissive_schema(pki.anchor_cert), clock=pki.clock, max_fetches=50, max_depth=50)
    message = await refused(v, signed(a, "/net/a/doc"), net)
    assert f"certificate chain loops at {a.name}" in message
    assert net.calls == [a.name, b.name]


def _chain(akey: Ed25519Key, length: int) -> tuple[Ed25519Key, list[Certificate]]:
    """anchor -> k1 -> ... -> k<length>: the last key and the certificates."""
    issuer, certs = akey, []
    for n in range(1, length + 1):
        k, cert = certified(f"/net/k{n}", issuer)
        certs.append(cert)
        issuer = k
    return issuer, certs


async def test_chain_deeper_than_bound_rejected(pki):
    last, certs = _chain(pki.anchor_key, 5)
    v = Validator(permissive_schema(pki.anchor_cert), clock=pki.clock, max_depth=4, max_fetches=50)
    net = Net(*certs)
    message = await refused(v, signed(last, "/net/k5/doc"), net)
    assert f"certificate chain deeper than 4 at {certs[0].key_name}" in message
    assert len(net.calls) == 4
    ok = Validator(permissive_schema(pki.anchor_cert), clock=pki.clock, max_depth=5, max_fetches=50)
    assert await ok.validate(signed(last, "/net/k5/doc"), net) == "any"


async def test_max_fetches_bound(pki):
    last, certs = _chain(pki.anchor_key, 3)
    net = Net(*certs)
    v = Validator(permissive_schema(pki.anchor_cert), clock=pki.clock, max_fetches=2)
    message = await refused(v, signed(last, "/net/k3/doc"), net)
    assert f"more than 2 certificates to fetch at {certs[0].key_name}" in message
    assert len(net.calls) == 2
    v3 = Validator(permissive_schema(pki.anchor_cert), clock=pki.clock, max_fetches=3)
    assert await v3.validate(signed(last, "/net/k3/doc"), net) == "any"


async def test_digest_only_rejected_under_schema(pki):
    data = make_data("/net/alice/doc", b"x")  # DigestSha256
    assert data.sig_type == SigType.DIGEST_SHA256
    v = pki.validator()
    message = await refused(v, data, pki.net())
    assert "digest-only Data (no signer): a trust schema accepts only signed Data" in message
    assert await v.validate(data, pki.net(), vouched=True) == "vouched"  # its digest was named by someone trusted
    tampered = dataclasses.replace(data, content=b"y")
    assert implicit_digest(tampered) != implicit_digest(data)
    await refused(v, tampered, pki.net(), vouched=True)  # vouching does not excuse a wrong digest


async def test_forged_key_under_alices_name_rejected(pki):
    """An on-path attacker serves, for alice's key name, a certificate of its own key."""
    mallory = key("/net/mallory")
    posing = Ed25519Key(pki.alice.name, mallory._private)  # mallory's private key, alice's key name
    forged_cert = posing.sign(Data(pki.alice_cert.name, _content_for(mallory), ContentType.KEY, 0))
    net = Net()
    net.add(forged_cert, under=pki.alice.name)
    message = await refused(pki.validator(), signed(posing, "/net/alice/doc"), net)
    assert "the key id does not match the public key" in message


def _content_for(k: Ed25519Key) -> bytes:
    return self_signed(k, now=T).data.content


async def test_certificate_of_another_key_rejected(pki):
    net = Net()
    net.add(pki.bob_cert, under=pki.alice.name)  # asked for alice's, the path answers bob's
    message = await refused(pki.validator(), signed(pki.alice, "/net/alice/doc"), net)
    assert f"asked for a certificate of {pki.alice.name}, got {pki.bob_cert.name}" in message


async def test_attacker_issued_certificate_for_alice_rejected(pki):
    mallory, mallory_cert = certified("/net/mallory", pki.anchor_key)  # a legitimate user
    fake = issue(mallory, pki.alice, now=T - DAY)  # mallory certifies alice's key name: not her place
    net = Net(mallory_cert)
    net.add(fake)
    message = await refused(pki.validator(), signed(pki.alice, "/net/alice/doc"), net)
    assert f"certificate {fake.name} signed by {mallory.name}: " in message  # the broken link
    assert f"rule 'user-certs' wants a signer matching /net/KEY/<*>, not {mallory.name}" in message


async def test_forged_signature_with_genuine_certificate_rejected(pki):
    forger = Ed25519Key(pki.alice.name, key("/x")._private)  # alice's name, not alice's key
    message = await refused(pki.validator(), signed(forger, "/net/alice/doc"), pki.net())
    assert f"bad ed25519 signature by key {pki.alice.name} (rule 'user-data')" in message


# --- the chain cache -----------------------------------------------------------------------------


async def test_cache_avoids_refetching(pki):
    net = pki.net()
    v = pki.validator()
    for seg in range(10):
        await v.validate(signed(pki.alice, f"/net/alice/doc/seg={seg}"), net)
    assert net.calls == [pki.alice.name]
    assert v.counters["chain_walks"] == 1 and v.counters["cache_hits"] == 9


async def test_cache_expires_at_certificate_end(pki):
    net = pki.net()
    v = pki.validator(cache_ttl=365 * DAY)
    await v.validate(signed(pki.alice, "/net/alice/a"), net)
    end = pki.alice_cert.not_after_ms / 1000.0
    pki.clock.now = end - 1
    await v.validate(signed(pki.alice, "/net/alice/b"), net)
    assert len(net.calls) == 1
    pki.clock.now = end + 1
    message = await refused(v, signed(pki.alice, "/net/alice/c"), net)
    assert "is expired at" in message
    assert len(net.calls) == 2  # the expired chain was dropped, the certificate fetched again


async def test_cache_ttl(pki):
    net = pki.net()
    v = pki.validator(cache_ttl=60)
    await v.validate(signed(pki.alice, "/net/alice/a"), net)
    pki.clock.now += 61
    await v.validate(signed(pki.alice, "/net/alice/b"), net)
    assert len(net.calls) == 2


async def test_cache_does_not_bypass_rules(pki):
    net = pki.net()
    v = pki.validator()
    await v.validate(signed(pki.alice, "/net/alice/a"), net)
    message = await refused(v, signed(pki.alice, "/net/bob/a"), net)  # alice's chain is cached, the rule still applies
    assert "with user=bob" in message


async def test_offered_certificates_are_used_and_checked(pki):
    v = pki.validator()
    v.offer([pki.alice_cert])
    assert await v.validate(signed(pki.alice, "/net/alice/doc")) == "user-data"  # no fetch at all
    rogue_key, _ = anchor("/net")
    mallory, mallory_cert = certified("/net/mallory", rogue_key)
    v.offer([mallory_cert])
    message = await refused(v, signed(mallory, "/net/mallory/doc"))
    assert f"no certificate of {rogue_key.name} at hand" in message
    assert pki.anchor_cert in v.certificates() and pki.alice_cert in v.certificates()


# --- a caller's key ------------------------------------------------------------------------------


async def test_validate_key(pki):
    net = pki.net()
    v = pki.validator()
    assert await v.validate_key(pki.alice.name, pki.alice.public_bytes(), net) == "user-certs"
    with pytest.raises(icnd.VerificationError, match="not the one its certificate certifies"):
        await v.validate_key(pki.alice.name, key("/net/alice").public_bytes(), net)
    stranger = key("/net/stranger")
    with pytest.raises(icnd.VerificationError, match=f"cannot retrieve the certificate of {stranger.name}"):
        await v.validate_key(stranger.name, stranger.public_bytes(), net)
    assert v.counters["refused"] == 2
    assert await v.validate_key(pki.anchor_key.name, pki.anchor_key.public_bytes()) == "anchor"
    assert await Validator(None, clock=Clock()).validate_key(stranger.name, stranger.public_bytes()) == "integrity"


async def test_forget_drops_cached_chains(pki):
    net = pki.net()
    v = pki.validator()
    await v.validate(signed(pki.alice, "/net/alice/a"), net)
    v.forget()
    await v.validate(signed(pki.alice, "/net/alice/b"), net)
    assert net.calls == [pki.alice.name, pki.alice.name]


# --- without a schema: integrity only ------------------------------------------------------------


async def test_integrity_mode(pki):
    v = Validator(None, clock=pki.clock)
    net = pki.net()
    assert await v.validate(signed(pki.alice, "/anything"), net) == "integrity"
    assert await v.validate(signed(pki.alice, "/anything/else"), net) == "integrity"
    assert net.calls == [pki.alice.name]  # the key, fetched once
    # a bare key Data (earlier versions) serves too
    bare = pki.bob.sign(Data(pki.bob.name, pki.bob.public_bytes(), ContentType.KEY, 0))
    assert await v.validate(signed(pki.bob, "/b"), Net(bare)) == "integrity"
    # honest about its limits: a key anyone self-signs is believed (no anchor is checked)
    anyone = key("/net/alice")
    assert await v.validate(signed(anyone, "/net/alice/doc"), Net(self_signed(anyone, now=T))) == "integrity"


async def test_integrity_mode_refusals(pki):
    v = Validator(None, clock=pki.clock)
    forger = Ed25519Key(pki.alice.name, key("/x")._private)
    message = await refused(v, signed(forger, "/doc"), pki.net())
    assert f"bad ed25519 signature by key {pki.alice.name}" in message
    assert "digest-only Data (no signer): nothing vouches for it" in await refused(v, make_data("/d", b"x"))
    assert await v.validate(make_data("/d", b"x"), vouched=True) == "vouched"
    c = key("/c")
    assert f"signed by unknown key {c.name}" in await refused(v, signed(c, "/c/doc"))  # no fetch given
    d = key("/d")
    wrong = Net()
    wrong.add(pki.bob_cert, under=d.name)
    assert f"{pki.bob_cert.name} is not a key named {d.name}" in await refused(v, signed(d, "/d/doc"), wrong)
    message = await refused(v, signed(key("/e"), "/e/doc"), Net())
    assert "cannot retrieve its signing key" in message


async def test_integrity_mode_known_keys_and_hmac(pki):
    chain = KeyChain()
    chain.add_signing_key(pki.alice)
    secret = HmacKey(Name("/session/KEY/1"), b"s" * 32)
    chain.add_signing_key(secret)
    v = Validator(None, chain, clock=pki.clock)
    net = Net()
    assert await v.validate(signed(pki.alice, "/x"), net) == "integrity" and net.calls == []
    assert await v.validate(secret.sign(Data(Name("/h"), b"x")), net) == "hmac"
    other = HmacKey(Name("/session/KEY/2"), b"t" * 32)
    assert "HMAC signature by /session/KEY/2, a key not known here" in await refused(
        v, other.sign(Data(Name("/h"), b"x")))
    # HMAC is accepted under a schema too, when the secret is known here
    with_schema = Validator(pki.schema, chain, clock=pki.clock)
    assert await with_schema.validate(secret.sign(Data(Name("/h"), b"x"))) == "hmac"


# --- function callers ----------------------------------------------------------------------------


def test_caller_allowed():
    alice = Name("/net/alice/KEY/k1")
    assert caller_allowed(["/net/<user>/KEY/<*>"], alice)
    assert not caller_allowed(["/net/<user>/KEY/<*>"], Name("/net/alice/sub/KEY/k1"))
    assert caller_allowed(["/net/alice"], alice)  # a prefix
    assert not caller_allowed(["/net/al"], alice)  # components, not characters
    assert caller_allowed([Pattern.parse("/net/alice/KEY/<*>")], alice)
    assert not caller_allowed([Pattern.parse("/net/bob/KEY/<*>"), "/org"], alice)
    assert caller_allowed(["/org", "/net/<u>/<**>"], alice)
    assert not caller_allowed([], alice)
    with pytest.raises(ValueError, match="unknown pattern"):
        caller_allowed(["/net/<a b>"], alice)


# --- certificates a validator is handed must still be right -------------------------------------


async def test_self_signed_non_anchor_refused(pki):
    eve = key("/net/eve")
    message = await refused(pki.validator(), signed(eve, "/net/eve/doc"), Net(self_signed(eve, now=T - DAY)))
    assert "is self-signed and not a trust anchor" in message


async def test_issuer_signature_checked(pki):
    """A certificate with a valid shape naming the anchor as issuer, but not signed by it."""
    posing = Ed25519Key(pki.anchor_key.name, key("/x")._private)
    carol = key("/net/carol")
    fake = make_certificate(carol.name, carol.public_bytes(), posing, now=T - DAY)
    message = await refused(pki.validator(), signed(carol, "/net/carol/doc"), Net(fake))
    assert f"certificate {fake.name}: " in message and "bad ed25519 signature" in message


# --- whatever the path serves, the answer is a VerificationError ---------------------------------

_ALICE = key("/net/alice")
_ANCHOR_KEY, _ANCHOR = anchor("/net")
_SCHEMA = Schema([Rule("user-data", Pattern.parse("/net/<user>/<**>"), Pattern.parse("/net/<user>/KEY/<*>")),
                  Rule("user-certs", Pattern.parse("/net/<user>/KEY/<**>"), Pattern.parse("/net/KEY/<*>"))],
                 [_ANCHOR], "fuzz.toml")


@settings(max_examples=150, deadline=None)
@given(content=st.binary(max_size=120), content_type=st.sampled_from([ContentType.KEY, ContentType.BLOB]),
       suffix=st.lists(st.binary(max_size=9), max_size=3), by_anchor=st.booleans(), with_schema=st.booleans())
def test_served_garbage_is_a_refusal(content, content_type, suffix, by_anchor, with_schema):
    signer = _ANCHOR_KEY if by_anchor else _ALICE
    name = _ALICE.name.append_wire(*(bytes((0x08 if i < len(suffix) - 1 else 0x36,)) + s
                                     for i, s in enumerate(suffix)))
    served = signer.sign(Data(name, content, content_type, 0))

    async def fetch(key_name: Name) -> Data:
        return served

    v = Validator(_SCHEMA if with_schema else None, clock=Clock())
    data = signed(_ALICE, "/net/alice/doc")

    async def check() -> None:
        try:
            await v.validate(data, fetch)
        except icnd.VerificationError:
            pass

    trio.run(check)


# --- validate_carried: the chain a Data brings along (link-state records) -------------------------

def test_validate_carried_accepts_with_the_carried_chain_synchronously(pki):
    v = pki.validator()
    data = signed(pki.alice, "/net/alice/routing/ls/v=1")
    assert v.validate_carried(data, [pki.alice_cert.data]) == "user-data"
    assert v.counters["certs_fetched"] == 1 and v.counters["validated"] == 1


def test_validate_carried_refuses_without_the_chain_and_keeps_no_offer(pki):
    v = pki.validator()
    data = signed(pki.alice, "/net/alice/routing/ls/v=1")
    with pytest.raises(icnd.VerificationError, match="does not carry a certificate"):
        v.validate_carried(data, [pki.bob_cert.data])
    assert v.certificates() == [pki.anchor_cert]  # the carried one was not kept as an offer


def test_validate_carried_refuses_a_chain_outside_the_schema(pki, tmp_path):
    mallory_anchor, mallory_cert = anchor("/net")  # another /net anchor, not the schema's
    mallory, mallory_alice = certified("/net/alice", mallory_anchor)
    v = pki.validator()
    data = signed(mallory, "/net/alice/routing/ls/v=9")
    with pytest.raises(icnd.VerificationError):
        v.validate_carried(data, [mallory_alice.data, mallory_cert.data])
