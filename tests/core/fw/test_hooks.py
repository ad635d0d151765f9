"""Namespace handlers (icnd.core.hooks): the forwarder's side of the
contract, with a small handler that answers ``/app/<x>`` by fetching
``/data/<x>`` from its hook face."""

from __future__ import annotations

from icnd import Data, Interest, Nack, NackReason, Name
from icnd.core.fw.forwarder import Forwarder, Send
from icnd.core.hooks import HOOK_FACE
from icnd.core.tables.pit import PitEntry
from icnd.name import generic
from icnd.packet import Packet

APP, UP = 1, 2
APP_NS, OTHER_NS = generic("app"), generic("other")


class Relay:
    """Answers ``/app/<x>`` with the content of ``/data/<x>``, fetched
    through the pipelines from its hook face; forwards ``/other/...`` as it
    is to `UP` and passes a Nack down."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        self.inbox: list[object] = []
        self.waiting: dict[Name, PitEntry] = {}  # /data name -> the /app entry it answers
        self.fw: Forwarder | None = None
        self.face: int | None = None

    # the protocol
    def attach(self, fw: Forwarder, face: int) -> None:
        self.calls.append(("attach", face))
        self.fw, self.face = fw, face

    def route(self, entry: PitEntry, in_face: int, interest: Interest, now: float) -> None:
        self.calls.append(("route", interest.name))
        assert self.fw is not None and self.face is not None
        if entry.comps[0] == OTHER_NS:
            self.fw.send_interest(entry, UP, interest, now)
            return
        self.fw.record_out(entry, self.face, interest, now)
        self.inbox.append(entry)

    def after_nack(self, entry: PitEntry, face: int, nack: Nack, now: float) -> None:
        self.calls.append(("after_nack", nack.name))
        assert self.fw is not None
        self.fw.reject(entry, nack.reason, now, "relayed")

    def deliver(self, packet: Packet) -> None:
        self.calls.append(("deliver", packet))
        self.inbox.append(packet)

    def process(self, now: float) -> bool:
        if not self.inbox:
            return False
        assert self.fw is not None and self.face is not None
        while self.inbox:
            item = self.inbox.pop(0)
            if isinstance(item, PitEntry):
                name = Name.from_wire((generic("data"),) + item.comps[1:])
                self.waiting[name] = item
                self.fw.on_incoming_interest(self.face, Interest(name, nonce=99), now)
            elif isinstance(item, Data):
                entry = self.waiting.pop(item.name)
                self.fw.on_incoming_data(self.face, Data(entry.interest.name, item.content), now)
        return True

    def pending(self) -> bool:
        return bool(self.waiting or self.inbox)

    def on_face_down(self, face: int, now: float) -> None:
        self.calls.append(("face_down", face))

    def stats(self) -> dict[str, int]:
        return {"relay_waiting": len(self.waiting)}


def forwarder(**hooks: Relay) -> Forwarder:
    fw = Forwarder(hooks={generic(k): h for k, h in hooks.items()})
    fw.add_face(APP, local=True)
    fw.add_face(UP)
    fw.add_route(Name("/"), UP)
    return fw


def test_the_handler_answers_through_its_hook_face() -> None:
    relay = Relay()
    fw = forwarder(app=relay)
    assert relay.calls == [("attach", HOOK_FACE)] and fw.faces[HOOK_FACE].local
    out = fw.on_packet(APP, Interest(Name("/app/x"), nonce=1), 0.0)
    # route, not the best-route fast path; the handler's own Interest goes up by FIB
    assert relay.calls[1] == ("route", Name("/app/x"))
    assert [(s.face, s.packet.name) for s in out] == [(UP, Name("/data/x"))]
    assert fw.table_sizes()["relay_waiting"] == 1
    data = Data(Name("/data/x"), b"v")
    out = fw.on_packet(UP, data, 0.01)
    # the Data sent to the hook face never reaches the shell; the answer does
    assert out == [Send(APP, Data(Name("/app/x"), b"v"))]
    assert ("deliver", data) in relay.calls
    assert len(fw.pit) == 0 and not relay.pending()


def test_a_nack_under_the_namespace_goes_to_the_handler() -> None:
    relay = Relay()
    fw = forwarder(other=relay)
    out = fw.on_packet(APP, Interest(Name("/other/y"), nonce=2), 0.0)
    assert out == [Send(UP, out[0].packet)]
    out = fw.on_packet(UP, Nack(Name("/other/y"), 2, NackReason.CONGESTION), 0.01)
    assert relay.calls[-1] == ("after_nack", Name("/other/y"))
    assert out == [Send(APP, Nack(Name("/other/y"), 2, NackReason.CONGESTION, "relayed"))]


def test_other_names_never_reach_a_handler() -> None:
    relay = Relay()
    fw = forwarder(app=relay)
    out = fw.on_packet(APP, Interest(Name("/p/app"), nonce=3), 0.0)
    assert [s.face for s in out] == [UP]
    assert fw.on_packet(UP, Nack(Name("/p/app"), 3, NackReason.NO_ROUTE), 0.01)[0].face == APP
    assert relay.calls == [("attach", HOOK_FACE)]


def test_each_handler_has_its_own_hook_face() -> None:
    one, two = Relay(), Relay()
    fw = Forwarder(hooks={APP_NS: one, OTHER_NS: two, generic("again"): one})
    assert one.calls == [("attach", HOOK_FACE)] and two.calls == [("attach", HOOK_FACE - 1)]
    fw.add_face(APP)
    sizes = fw.table_sizes()
    assert sizes["faces"] == 1  # hook faces are not counted
    assert "relay_waiting" in sizes
    fw.on_face_down(APP)
    assert one.calls[-1] == two.calls[-1] == ("face_down", APP)
