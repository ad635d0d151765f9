"""The node's producer table: stores first, then the longest registered prefix, else no-route."""

import time

import msgpack
import pytest

from icnd.daemon.producers import ProducerTable, add_node_producers
from icnd.trust.cert import parse_key_data, self_signed
from icnd.name import Name
from icnd.packet import ContentType, Data, Interest, Nack, NackReason
from icnd.security import Ed25519Key

NODE = Name("/node/n")


def _interest(uri: str, **kw) -> Interest:
    return Interest(Name(uri), nonce=1, **kw)


def test_order_stores_then_longest_prefix_then_nack() -> None:
    table = ProducerTable(NODE)
    calls: list[str] = []

    def store(tag: str, answers: str):
        def lookup(interest: Interest) -> Data | None:
            calls.append(tag)
            return Data(interest.name, tag.encode()) if interest.name == Name(answers) else None
        return lookup

    table.add_store(store("repo", "/node/n/member/x"))
    table.add_store(store("objects", "/obj"))
    table.add(NODE.comps + (b"\x08member",), lambda i: Data(i.name, b"member"))
    table.add(NODE.comps + (b"\x08group", b"\x08install"), lambda i: Data(i.name, b"install"))
    table.add(NODE.comps + (b"\x08held",), lambda i: None)

    assert table.produce(_interest("/node/n/member/x")).content == b"repo"  # a store first, in order
    assert calls == ["repo"]
    assert table.produce(_interest("/obj")).content == b"objects"
    assert table.produce(_interest("/node/n/member/y/contrib")).content == b"member"
    assert table.produce(_interest("/node/n/group/install/g")).content == b"install"
    assert table.produce(_interest("/node/n/held/1")) is None
    for uri in ("/node/n/group/other", "/node/n", "/elsewhere"):
        nack = table.produce(_interest(uri))
        assert isinstance(nack, Nack) and nack.reason == NackReason.NO_ROUTE
    with pytest.raises(ValueError):
        table.add(NODE.comps + (b"\x08member",), lambda i: None)


def test_the_node_answers_ping_key_and_status() -> None:
    key = Ed25519Key.generate(NODE)
    cert = self_signed(key, now=time.time())
    table = ProducerTable(NODE)
    add_node_producers(table, cert, key, lambda: {"name": "/node/n"})
    ping = table.produce(_interest("/node/n/ping/123"))
    assert isinstance(ping, Data) and ping.content == b"" and ping.key_locator == key.name
    for interest in (Interest(cert.name, nonce=1), Interest(key.name, nonce=1, can_be_prefix=True),
                     _interest("/node/n/KEY", can_be_prefix=True)):
        answer = table.produce(interest)
        assert isinstance(answer, Data) and answer.name == cert.name and answer.content_type == ContentType.KEY
        assert parse_key_data(answer) == key.public_bytes()  # the node's certificate, under its name
    assert isinstance(table.produce(_interest("/node/n/KEY")), Nack)  # not the certificate, no CanBePrefix
    assert isinstance(table.produce(Interest(key.name, nonce=1)), Nack)  # ditto
    status = table.produce(_interest("/node/n/status"))
    assert isinstance(status, Data) and msgpack.unpackb(status.content) == {"name": "/node/n"}
