#!/usr/bin/env python3
"""Forwarding benchmark: Interest/Data exchanges per second and latency
through icnd daemons running as separate processes, against a raw UDP relay.

Cases (each against fresh processes):

- ``raw-udp-relay`` (the baseline): a trio process with one UDP socket that
  relays datagrams consumer -> producer and back by source address, with no
  decoding, in the same drain-per-wakeup loop style as icnd's UDP listener
  (``wait_readable``, then up to 256 ``recvfrom`` + ``sendto``);
- ``udp-1hop``: consumer and producer are UDP sockets talking to one daemon's
  UDP listener; the daemon routes ``/bench`` to the producer's address;
- ``unix-1hop``: consumer and producer are Unix stream connections to the
  daemon's socket (4-byte big-endian length framing); the producer registers
  ``/bench`` for its own connection (``face="self"``) with a management
  command sent over that same connection;
- ``udp-3hop``: three daemons in a line (consumer -> A -> B -> C -> producer).

The load generator (consumer and producer in one process, this one) uses
plain non-blocking sockets and epoll, with a closed-loop window of
outstanding Interests (``--window``, default 128).  Interests are patched in
place from one pre-encoded template (unique name ``/bench/<run>/<seq>`` and
nonce per Interest, so the Content Store never answers and the PIT never
aggregates); the producer answers each with a Data (100-byte content,
DigestSha256) patched in place from a template: name and a real digest.
Nothing is decoded on the hot path; timestamps are taken once per batch.
Interest lifetime and consumer timeout are 1 s; the warm-up is longer than
the lifetime, so PIT-expiry timers fire at their steady rate while
measuring (the dead-nonce list, 65,536 records, fills after ~3 s at 20k/s:
within a default run, not within ``--quick``).  Lost exchanges are counted
as timeouts, not retried.

CPU placement (2 cores): the daemon or relay is pinned to one core and the
load generator to the other, where it busy-polls (``--no-spin``: sleep in
epoll; a sleeping peer makes every ``sendto`` towards it pay a cross-core
wake-up, ~10 us in this VM, charged to the forwarder).  For ``udp-3hop`` the
three daemons share the daemon core (three forwarding hops on one core; its
ratio is against the 1-hop relay, as for the other cases).  The load
generator's own ceiling (consumer straight to producer, same code) is
measured first and printed, so one can see it is not the bottleneck.

Besides rate and latency each case reports, from /proc, the CPU time the
forwarder process(es) spent per exchange (``cpu_us_per_exchange``: robust to
other load on the machine), their share of a core (``forwarder_cpu``), the
CPU other processes used meanwhile (``other_cpu``; ``contended`` when above
a quarter of a core: rate and latency are then disturbed) and ``cpu_ratio``
= relay CPU per exchange / this case's.

Output: progress on stderr; on stdout a table, then one JSON line per case
(``--json-only``: only the JSON lines).  ``ratio`` = case exchanges/s /
raw-udp-relay exchanges/s; the baseline prints its own line without a ratio;
when it cannot run, no ratios are printed.  ``--profile`` then runs udp-1hop
once more with the daemon (bench runner) under cProfile and its garbage
collections timed, and prints the hottest functions on stderr.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import platform
import secrets
import select
import socket
import struct
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/_common.py (it adds the checkout)

import _common as C  # noqa: E402

CONTENT_SIZE = 100
LIFETIME_MS = 1000
TIMEOUT = 1.0  # consumer gives up on an Interest after this long
DEFAULT_WINDOW = 128
HOP_LIMIT = 32
SOCK_BUFFER = 4 * 1024 * 1024
DRAIN_BATCH = 1024  # datagrams per socket per wakeup in the load generator
RING = 1 << 20  # per-Interest state slots (seq & MASK)
MASK = RING - 1
TARGET_RATE = 20_000
TARGET_RATIO = 0.5
CONTENDED = 0.25  # other processes using more than this share of a core: numbers disturbed

SEQ = struct.Struct(">I")
SEQ_NONCE = struct.Struct(">IBI")  # seq value, msgpack uint32 marker, nonce
FRAME = struct.Struct(">I")


# --- packet templates ----------------------------------------------------------------------


class Wire:
    """Pre-encoded Interest and Data for ``/bench/<tag>/<seq>`` and where to patch them.

    The templates come from icnd's own codec; the layout is checked once here
    (and patched packets are decoded once) so that the hot loops can patch
    and parse by offset."""

    def __init__(self, tag: bytes | None = None) -> None:
        from icnd.codec import decode, encode
        from icnd.name import Name, generic
        from icnd.packet import Data, Interest
        from icnd.security import DigestKey, KeyChain

        self.tag = tag or secrets.token_hex(4).encode()
        marker = b"\xfe\xed\xfa\xce"
        comps = (generic("bench"), generic(self.tag), b"\x08" + marker)
        self.prefix_uri = "/bench"
        interest = Interest(Name.from_wire(comps), nonce=0xDEADBEEF, lifetime_ms=LIFETIME_MS, hop_limit=HOP_LIMIT)
        iwire = encode(interest)
        data = DigestKey().sign(Data(Name.from_wire(comps), bytes(range(CONTENT_SIZE))))
        dwire = encode(data)
        off = iwire.find(marker)
        if off < 0 or iwire.find(marker, off + 1) >= 0 or dwire.find(marker) != off:
            raise RuntimeError("unexpected packet layout (name)")
        if iwire[off + 4 : off + 9] != b"\xce\xde\xad\xbe\xef":
            raise RuntimeError("unexpected packet layout (nonce)")
        # Interest, Data and Nack all start [fixarray, VERSION, type, name...]
        self.seq_off = off
        self.name_prefix = iwire[3:off]  # name header and components before the seq value
        self.interest = iwire
        self.data = dwire
        self.sig_off = len(dwire) - 32
        if dwire[self.sig_off - 2 : self.sig_off] != b"\xc4\x20":
            raise RuntimeError("unexpected packet layout (signature)")
        self.portion = self.sig_off - 2  # the signed portion: everything before sig_value
        # self-check: a patched Interest and Data decode to what we mean
        buf = bytearray(iwire)
        SEQ_NONCE.pack_into(buf, off, 12345, 0xCE, 0x80000001)
        got = decode(bytes(buf))
        if not (type(got) is Interest and got.name.comps[-1] == b"\x08" + SEQ.pack(12345) and got.nonce == 0x80000001):
            raise RuntimeError("patched Interest does not decode as meant")
        dbuf = bytearray(dwire)
        dbuf[off : off + 4] = SEQ.pack(12345)
        dbuf[self.sig_off :] = hashlib.sha256(memoryview(dbuf)[: self.portion]).digest()
        got = decode(bytes(dbuf))
        if not (type(got) is Data and got.name == Name.from_wire(comps[:2] + (b"\x08" + SEQ.pack(12345),))):
            raise RuntimeError("patched Data does not decode as meant")
        KeyChain().verify(got)  # the digest we patch in is the real one


# --- results ----------------------------------------------------------------------------------


class Result:
    def __init__(self) -> None:
        self.elapsed = 0.0  # measured window, seconds
        self.completed = 0  # Data received in the window
        self.sent = 0  # Interests sent in the window
        self.timeouts = 0  # of those, never answered within TIMEOUT
        self.warm_timeouts = 0  # Interests sent during the warm-up that were never answered
        self.nacks = 0
        self.late = 0  # Data after its Interest had timed out
        self.bad = 0  # packets that were not ours
        self.errors = 0  # socket errors (ICMP unreachable and the like)
        self.rtts: list[float] = []
        self.target_cpu: list[float] = []  # CPU seconds of each process under test while measuring
        self.loadgen_cpu = 0.0
        self.loadgen_idle = 0.0  # seconds the load generator found nothing to do while measuring
        self.other_cpu = 0.0  # CPU seconds used by everything else on the machine meanwhile

    def cpu_note(self) -> str:
        if not self.elapsed:
            return ""
        parts = [f"{c / self.elapsed:.0%}" for c in self.target_cpu]
        us = self.us_per_exchange
        return (f"cpu: forwarder {'+'.join(parts) or '?'} of a core ({us:.1f} us/exchange), "
                f"load generator {self.loadgen_cpu / self.elapsed:.0%} (busy {self.loadgen_busy:.0%}), "
                f"other processes {self.other_cpu / self.elapsed:.0%}; bound by: {self.bottleneck}")

    @property
    def loadgen_busy(self) -> float:
        """Share of the window the load generator was doing work, not waiting for packets."""
        return 1.0 - self.loadgen_idle / self.elapsed if self.elapsed else float("nan")

    @property
    def bottleneck(self) -> str:
        el = self.elapsed or float("nan")
        if sum(self.target_cpu) / el >= 0.9 or any(c / el >= 0.9 for c in self.target_cpu):
            return "forwarder"
        if self.loadgen_busy >= 0.9:
            return "load-generator"
        if self.other_cpu / el > CONTENDED:
            return "other-processes"
        return "latency"  # nobody saturated: the window is too small for the round-trip time

    @property
    def us_per_exchange(self) -> float:
        """CPU microseconds the processes under test spent per completed exchange."""
        return sum(self.target_cpu) / self.completed * 1e6 if self.completed else float("nan")

    @property
    def rate(self) -> float:
        return self.completed / self.elapsed if self.elapsed > 0 else 0.0

    def latency(self) -> tuple[float, float]:
        return C.latency_ms(self.rtts)

    def loss_note(self) -> str:
        parts = [f"{self.timeouts} timeouts"]
        for what in ("warm_timeouts", "nacks", "late", "bad", "errors"):
            v = getattr(self, what)
            if v:
                parts.append(f"{v} {what}")
        return ", ".join(parts)


class Clock:
    """Phases of one run: warm-up, measuring, draining (stop sending, collect).

    At the start and the end of the measured window it samples the CPU time
    of the processes under test (`pids`) and of the load generator itself."""

    def __init__(self, warmup: float, duration: float, pids: list[int], res: Result) -> None:
        self.start = time.perf_counter()
        self.measure_at = self.start + warmup
        self.end_at = self.measure_at + duration
        self.stop_at = self.end_at + TIMEOUT + 0.2
        self.pids = pids
        self.res = res
        self._cpu0: list[float] = []
        self._self0 = self._busy0 = 0.0

    def begin(self, now: float) -> None:
        self.measure_at = now
        self._cpu0 = [C.cpu_seconds(p) for p in self.pids]
        self._self0 = C.self_cpu_seconds()
        self._busy0 = C.machine_busy_seconds()

    def finish(self, now: float) -> None:
        res = self.res
        res.elapsed = now - self.measure_at
        res.target_cpu = [C.cpu_seconds(p) - c for p, c in zip(self.pids, self._cpu0)]
        res.loadgen_cpu = C.self_cpu_seconds() - self._self0
        busy = C.machine_busy_seconds() - self._busy0
        res.other_cpu = max(0.0, busy - sum(res.target_cpu) - res.loadgen_cpu)


# --- load generator: UDP ----------------------------------------------------------------------


def udp_socket() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, SOCK_BUFFER)
        except OSError:
            pass
    s.bind(("127.0.0.1", 0))
    s.setblocking(False)
    return s


def run_udp(cons: socket.socket, target: tuple[str, int], prod: socket.socket, w: Wire,
            window: int, warmup: float, duration: float, pids: list[int] = (), spin: bool = False) -> Result:
    """Consumer `cons` sends Interests to `target`; producer `prod` answers whoever asks.

    `spin`: busy-poll (never sleep in epoll), for a load generator alone on its core."""
    res = Result()
    wait = 0 if spin else 0.005
    perf = time.perf_counter
    csend, crecv = cons.sendto, cons.recv
    precvfrom, psendto = prod.recvfrom, prod.sendto
    cfd, pfd = cons.fileno(), prod.fileno()
    ep = select.epoll()
    ep.register(cfd, select.EPOLLIN)
    ep.register(pfd, select.EPOLLIN)
    poll = ep.poll

    ibuf = bytearray(w.interest)
    pack_seq_nonce = SEQ_NONCE.pack_into
    unpack_seq = SEQ.unpack_from
    seq_off = w.seq_off
    seq_end = seq_off + 4
    prefix = w.name_prefix
    dbuf = bytearray(w.data)
    dview = memoryview(dbuf)[: w.portion]
    sig_off = w.sig_off
    sha = hashlib.sha256

    sent_at = array("d", bytes(8 * RING))
    state = bytearray(RING)  # 0 free/done, 1 sent in warm-up, 2 sent while measuring
    rtts = res.rtts
    rtt_add = rtts.append
    salt = secrets.randbits(31)
    seq = lo = 0
    outstanding = 0
    completed = sent = timeouts = warm_timeouts = nacks = late = bad = errors = 0
    clock = Clock(warmup, duration, list(pids), res)
    phase, mark = 0, 1
    next_expiry = 0.0
    idle = 0.0  # time spent waiting for packets or polling in vain (the load generator's spare capacity)
    gc_was = gc.isenabled()
    gc.disable()
    try:
        while True:
            now = perf()
            if phase == 0:
                if now >= clock.measure_at:
                    phase, mark = 1, 2
                    clock.begin(now)
                    idle = 0.0
            elif phase == 1:
                if now >= clock.end_at:
                    phase = 2
                    clock.finish(now)
                    res.loadgen_idle = idle
            elif outstanding == 0 or now >= clock.stop_at:
                break
            if now >= next_expiry:  # Interests unanswered for TIMEOUT are given up
                next_expiry = now + 0.01
                limit = now - TIMEOUT
                while lo < seq:
                    s = lo & MASK
                    st = state[s]
                    if st:
                        if sent_at[s] > limit:
                            break
                        state[s] = 0
                        outstanding -= 1
                        if st == 2:
                            timeouts += 1
                        else:
                            warm_timeouts += 1
                    lo += 1
            if phase < 2:
                n = window - outstanding
                while n > 0:
                    pack_seq_nonce(ibuf, seq_off, seq & 0xFFFFFFFF, 0xCE, 0x80000000 | ((seq ^ salt) & 0x7FFFFFFF))
                    try:
                        csend(ibuf, target)
                    except BlockingIOError:
                        break
                    except OSError:
                        errors += 1
                        break
                    s = seq & MASK
                    sent_at[s] = now
                    state[s] = mark
                    seq += 1
                    n -= 1
                    outstanding += 1
                    if mark == 2:
                        sent += 1
            t_poll = perf()
            events = poll(wait)
            t_woke = perf()
            idle += (t_woke - t_poll) if events else (t_woke - now)  # blocked, or a useless round
            for fd, _ in events:
                if fd == pfd:  # producer: answer every Interest
                    for _ in range(DRAIN_BATCH):
                        try:
                            pkt, addr = precvfrom(2048)
                        except BlockingIOError:
                            break
                        except OSError:
                            errors += 1
                            continue
                        if pkt[2] != 1 or not pkt.startswith(prefix, 3):
                            bad += 1
                            continue
                        dbuf[seq_off:seq_end] = pkt[seq_off:seq_end]
                        dbuf[sig_off:] = sha(dview).digest()
                        try:
                            psendto(dbuf, addr)
                        except OSError:
                            errors += 1
                else:  # consumer: match Data to Interests
                    now = perf()
                    measuring = phase == 1
                    for _ in range(DRAIN_BATCH):
                        try:
                            pkt = crecv(2048)
                        except BlockingIOError:
                            break
                        except OSError:
                            errors += 1
                            continue
                        if not pkt.startswith(prefix, 3):
                            bad += 1
                            continue
                        s = unpack_seq(pkt, seq_off)[0] & MASK
                        st = state[s]
                        if not st:
                            late += 1
                            continue
                        state[s] = 0
                        outstanding -= 1
                        if pkt[2] != 2:
                            nacks += 1
                            if st == 2:
                                timeouts += 1
                            continue
                        if measuring:
                            completed += 1
                            rtt_add(now - sent_at[s])
        while lo < seq:  # still unanswered at the end: lost
            if state[lo & MASK] == 2:
                timeouts += 1
            lo += 1
    finally:
        ep.close()
        if gc_was:
            gc.enable()
    res.completed, res.sent, res.timeouts, res.warm_timeouts = completed, sent, timeouts, warm_timeouts
    res.nacks, res.late, res.bad, res.errors = nacks, late, bad, errors
    return res


# --- load generator: stream (Unix) --------------------------------------------------------------


class _Out:
    """Bytes a non-blocking stream socket did not take yet."""

    __slots__ = ("sock", "pending")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pending = b""

    def send(self, view: memoryview) -> None:
        try:
            n = self.sock.send(view)
        except BlockingIOError:
            n = 0
        if n < len(view):
            self.pending = bytes(view[n:])

    def flush(self) -> bool:
        """True when nothing is pending any more."""
        if self.pending:
            try:
                n = self.sock.send(self.pending)
            except BlockingIOError:
                return False
            self.pending = self.pending[n:]
        return not self.pending


def run_stream(cons: socket.socket, prod: socket.socket, w: Wire, window: int,
               warmup: float, duration: float, pids: list[int] = (), spin: bool = False) -> Result:
    """Consumer and producer on connected stream sockets with 4-byte length framing."""
    res = Result()
    wait = 0 if spin else 0.005
    perf = time.perf_counter
    cons.setblocking(False)
    prod.setblocking(False)
    cfd, pfd = cons.fileno(), prod.fileno()
    ep = select.epoll()
    ep.register(cfd, select.EPOLLIN)
    ep.register(pfd, select.EPOLLIN)
    poll = ep.poll
    crecv_into, precv_into = cons.recv_into, prod.recv_into
    cout, pout = _Out(cons), _Out(prod)

    pack_seq_nonce = SEQ_NONCE.pack_into
    unpack_seq = SEQ.unpack_from
    unpack_len = FRAME.unpack_from
    seq_off = w.seq_off
    prefix = w.name_prefix
    sha = hashlib.sha256

    iframe = FRAME.pack(len(w.interest)) + w.interest
    ifl = len(iframe)
    cbatch = bytearray(iframe * window)
    cbview = memoryview(cbatch)
    dframe = FRAME.pack(len(w.data)) + w.data
    dfl = len(dframe)
    dmax = 4096  # Data frames per producer send
    pbatch = bytearray(dframe * dmax)
    pbview = memoryview(pbatch)
    d_seq = 4 + seq_off  # offsets inside a Data frame
    d_sig = 4 + w.sig_off
    d_portion = w.portion

    BUF = 1 << 20
    crbuf, prbuf = bytearray(BUF), bytearray(BUF)
    crview, prview = memoryview(crbuf), memoryview(prbuf)
    cstart = cend = pstart = pend = 0

    sent_at = array("d", bytes(8 * RING))
    state = bytearray(RING)
    rtt_add = res.rtts.append
    salt = secrets.randbits(31)
    seq = lo = 0
    outstanding = 0
    completed = sent = timeouts = warm_timeouts = nacks = late = bad = 0
    clock = Clock(warmup, duration, list(pids), res)
    phase, mark = 0, 1
    next_expiry = 0.0
    idle = 0.0  # time spent waiting for packets or polling in vain (the load generator's spare capacity)
    gc_was = gc.isenabled()
    gc.disable()
    try:
        while True:
            now = perf()
            if phase == 0:
                if now >= clock.measure_at:
                    phase, mark = 1, 2
                    clock.begin(now)
                    idle = 0.0
            elif phase == 1:
                if now >= clock.end_at:
                    phase = 2
                    clock.finish(now)
                    res.loadgen_idle = idle
            elif outstanding == 0 or now >= clock.stop_at:
                break
            if now >= next_expiry:
                next_expiry = now + 0.01
                limit = now - TIMEOUT
                while lo < seq:
                    s = lo & MASK
                    st = state[s]
                    if st:
                        if sent_at[s] > limit:
                            break
                        state[s] = 0
                        outstanding -= 1
                        if st == 2:
                            timeouts += 1
                        else:
                            warm_timeouts += 1
                    lo += 1
            if pout.pending and pout.flush():
                pass
            if cout.flush() and phase < 2:
                n = window - outstanding
                if n > 0:
                    off = seq_off + 4
                    for _ in range(n):
                        pack_seq_nonce(cbatch, off, seq & 0xFFFFFFFF, 0xCE, 0x80000000 | ((seq ^ salt) & 0x7FFFFFFF))
                        s = seq & MASK
                        sent_at[s] = now
                        state[s] = mark
                        seq += 1
                        off += ifl
                    outstanding += n
                    if mark == 2:
                        sent += n
                    cout.send(cbview[: n * ifl])
            t_poll = perf()
            events = poll(wait)
            t_woke = perf()
            idle += (t_woke - t_poll) if events else (t_woke - now)  # blocked, or a useless round
            for fd, _ in events:
                if fd == pfd:
                    if pout.pending:
                        continue  # back-pressure: answer more once the node took what we have
                    for _ in range(16):
                        if pend == BUF:
                            raise RuntimeError("producer receive buffer full (frame too large?)")
                        try:
                            got = precv_into(prview[pend:])
                        except BlockingIOError:
                            break
                        if not got:
                            raise RuntimeError("the node closed the producer connection")
                        pend += got
                        pos = pstart
                        k = 0  # Data frames prepared in pbatch
                        while pend - pos >= 4:
                            flen = unpack_len(prbuf, pos)[0]
                            f = pos + 4
                            if pend - f < flen:
                                break
                            pos = f + flen
                            if prbuf[f + 2] != 1 or not prbuf.startswith(prefix, f + 3):
                                bad += 1
                                continue
                            o = k * dfl
                            pbatch[o + d_seq : o + d_seq + 4] = prbuf[f + seq_off : f + seq_off + 4]
                            pbatch[o + d_sig : o + d_sig + 32] = sha(pbview[o + 4 : o + 4 + d_portion]).digest()
                            k += 1
                            if k == dmax:
                                pout.send(pbview[: k * dfl])
                                k = 0
                                if pout.pending:
                                    raise RuntimeError("producer cannot keep up writing to the node")
                        if k:
                            pout.send(pbview[: k * dfl])
                        if pos == pend:
                            pstart = pend = 0
                        else:
                            pstart = pos
                            if BUF - pend < 65536:
                                left = bytes(prview[pstart:pend])
                                prview[: len(left)] = left
                                pstart, pend = 0, len(left)
                        if pout.pending:
                            break
                else:
                    now = perf()
                    measuring = phase == 1
                    for _ in range(16):
                        if cend == BUF:
                            raise RuntimeError("consumer receive buffer full (frame too large?)")
                        try:
                            got = crecv_into(crview[cend:])
                        except BlockingIOError:
                            break
                        if not got:
                            raise RuntimeError("the node closed the consumer connection")
                        cend += got
                        pos = cstart
                        while cend - pos >= 4:
                            flen = unpack_len(crbuf, pos)[0]
                            f = pos + 4
                            if cend - f < flen:
                                break
                            pos = f + flen
                            if not crbuf.startswith(prefix, f + 3):
                                bad += 1
                                continue
                            s = unpack_seq(crbuf, f + seq_off)[0] & MASK
                            st = state[s]
                            if not st:
                                late += 1
                                continue
                            state[s] = 0
                            outstanding -= 1
                            if crbuf[f + 2] != 2:
                                nacks += 1
                                if st == 2:
                                    timeouts += 1
                                continue
                            if measuring:
                                completed += 1
                                rtt_add(now - sent_at[s])
                        if pos == cend:
                            cstart = cend = 0
                        else:
                            cstart = pos
                            if BUF - cend < 65536:
                                left = bytes(crview[cstart:cend])
                                crview[: len(left)] = left
                                cstart, cend = 0, len(left)
        while lo < seq:
            if state[lo & MASK] == 2:
                timeouts += 1
            lo += 1
    finally:
        ep.close()
        if gc_was:
            gc.enable()
    res.completed, res.sent, res.timeouts, res.warm_timeouts = completed, sent, timeouts, warm_timeouts
    res.nacks, res.late, res.bad = nacks, late, bad
    return res


# --- the raw relay (baseline), a separate process ------------------------------------------------


def relay_main(producer_port: int) -> None:
    """One UDP socket; consumer datagrams go to the producer, the producer's back
    to the consumer that last spoke, by address; no decoding.  Same loop
    shape, receive size and socket buffers as icnd's `UdpListener`."""
    import trio

    from icnd.faces import udp as icnd_udp

    recv_size = icnd_udp.RECV_SIZE
    per_wakeup = icnd_udp.DATAGRAMS_PER_WAKEUP

    async def main() -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, icnd_udp.SOCKET_BUFFER)
            except OSError:
                pass
        sock.bind(("127.0.0.1", 0))
        sock.setblocking(False)
        print(f"READY {sock.getsockname()[1]}", flush=True)
        producer = ("127.0.0.1", producer_port)
        peers: dict[tuple, tuple] = {}
        recvfrom, sendto = sock.recvfrom, sock.sendto
        while True:
            await trio.lowlevel.wait_readable(sock)
            for _ in range(per_wakeup):
                try:
                    data, addr = recvfrom(recv_size)
                except BlockingIOError:
                    break
                except OSError:
                    continue
                peer = peers.get(addr)
                if peer is None:
                    if addr == producer:
                        continue
                    peers[addr] = producer
                    peers[producer] = addr
                    peer = producer
                try:
                    sendto(data, peer)
                except OSError:
                    pass

    trio.run(main)


def start_relay(producer_port: int, cpus: set[int] | None, workdir: str) -> tuple[subprocess.Popen, int]:
    log_path = os.path.join(workdir, "relay.log")
    proc = C.spawn([sys.executable, str(Path(__file__).resolve()), "--relay-process", str(producer_port)],
                   log_path=log_path, cpus=cpus, stdout=subprocess.PIPE)
    line = C.read_line(proc, 20.0)
    if not line or not line.startswith("READY "):
        C.stop(proc)
        raise RuntimeError(f"relay did not start: {line!r} {C.tail(log_path, 5)}")
    return proc, int(line.split()[1])


# --- cases ------------------------------------------------------------------------------------------


class Case:
    def __init__(self, name: str, res: Result | None, note: str = "", error: str = "", how: str = "") -> None:
        self.name, self.res, self.note, self.error, self.how = name, res, note, error, how


def case_relay(opts, workdir: str) -> tuple[Result, str, str]:
    w = Wire()
    cons, prod = udp_socket(), udp_socket()
    proc, port = start_relay(prod.getsockname()[1], opts.daemon_cpus, workdir)
    try:
        res = run_udp(cons, ("127.0.0.1", port), prod, w, opts.window, opts.warmup, opts.duration, [proc.pid], opts.spin)
        return res, "", ""
    finally:
        C.stop(proc)
        cons.close()
        prod.close()


def _daemon_delta(d: C.Daemon, before: dict) -> str:
    """What the daemon's own counters say happened (a cross-check of the load generator's view)."""
    try:
        after = d.counters()
    except Exception as exc:  # the numbers stand without it
        return f"counters unavailable: {exc}"
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    keys = ("interests_in", "data_out", "nacks_out", "pit_expired", "unsolicited_data", "decode_errors", "pit_full")
    return " ".join(f"{k}={delta.get(k, 0)}" for k in keys)


def case_udp_1hop(opts, workdir: str, profile: str | None = None) -> tuple[Result, str, str]:
    w = Wire()
    cons, prod = udp_socket(), udp_socket()
    d = C.Daemon("fw-udp" if not profile else "fw-prof", workdir, cpus=opts.daemon_cpus, profile=profile,
                 use_cli=not opts.runner)
    try:
        d.command("route", "add", prefix=w.prefix_uri, face=f"udp://127.0.0.1:{prod.getsockname()[1]}")
        before = d.counters()
        res = run_udp(cons, d.udp_address(), prod, w, opts.window, opts.warmup, opts.duration, [d.proc.pid], opts.spin)
        return res, _daemon_delta(d, before), d.how
    finally:
        d.stop()
        cons.close()
        prod.close()


def case_unix_1hop(opts, workdir: str) -> tuple[Result, str, str]:
    w = Wire()
    d = C.Daemon("fw-unix", workdir, cpus=opts.daemon_cpus, use_cli=not opts.runner)
    cons = prod = None
    try:
        prod = C.connect_unix(d.socket_path)
        C.command_on(prod, "route", "add", prefix=w.prefix_uri, face="self")
        cons = C.connect_unix(d.socket_path)
        before = d.counters()
        res = run_stream(cons, prod, w, opts.window, opts.warmup, opts.duration, [d.proc.pid], opts.spin)
        return res, _daemon_delta(d, before), d.how
    finally:
        for s in (cons, prod):
            if s is not None:
                s.close()
        d.stop()


def case_udp_3hop(opts, workdir: str) -> tuple[Result, str, str]:
    w = Wire()
    cons, prod = udp_socket(), udp_socket()
    daemons: list[C.Daemon] = []
    try:
        for label in ("hop-a", "hop-b", "hop-c"):
            daemons.append(C.Daemon(label, workdir, cpus=opts.daemon3_cpus, use_cli=not opts.runner))
        a, b, c = daemons
        a.command("route", "add", prefix=w.prefix_uri, face=b.udp_uri())
        b.command("route", "add", prefix=w.prefix_uri, face=c.udp_uri())
        c.command("route", "add", prefix=w.prefix_uri, face=f"udp://127.0.0.1:{prod.getsockname()[1]}")
        before = [d.counters() for d in daemons]
        res = run_udp(cons, a.udp_address(), prod, w, opts.window, opts.warmup, opts.duration,
                      [d.proc.pid for d in daemons], opts.spin and not opts.spread_3hop)
        notes = [f"{d.label}: " + _daemon_delta(d, bf) for d, bf in zip(daemons, before)]
        return res, "; ".join(notes), a.how
    finally:
        for d in daemons:
            d.stop()
        cons.close()
        prod.close()


def loadgen_ceiling(opts) -> tuple[float, float]:
    """Exchanges/s of the load generator with the consumer talking straight to the producer."""
    t = 0.6 if opts.quick else 1.0
    w = Wire()
    cons, prod = udp_socket(), udp_socket()
    try:
        udp = run_udp(cons, prod.getsockname(), prod, w, opts.window, 0.2, t, spin=opts.spin).rate
    finally:
        cons.close()
        prod.close()
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        stream = run_stream(a, b, Wire(), opts.window, 0.2, t, spin=opts.spin).rate
    finally:
        a.close()
        b.close()
    return udp, stream


def profile_daemon(opts, workdir: str) -> None:
    """udp-1hop once more, the daemon (bench runner) under cProfile and timing its GC; report on stderr."""
    import pstats

    path = os.path.join(workdir, "daemon.prof")
    res, note, _ = case_udp_1hop(opts, workdir, profile=path)
    for _ in range(50):  # the runner writes the profile on its way out
        if os.path.exists(path):
            break
        time.sleep(0.1)
    p50, p99 = res.latency()
    out = sys.stderr
    print(f"\nudp-1hop under cProfile: {res.rate:,.0f} exchanges/s (p50 {p50:.2f} ms, p99 {p99:.2f} ms); "
          f"{res.cpu_note()}; {note}", file=out)
    log_path = os.path.join(workdir, "fw-prof.log")
    gc_lines = [ln for ln in C.tail(log_path, 50).splitlines() if ln.startswith("gc-stats")]
    print(gc_lines[-1] if gc_lines else "no gc-stats in the daemon log", file=out)
    if not os.path.exists(path):
        print("no profile written", file=out)
        return
    stats = pstats.Stats(path, stream=out)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(25)


# --- main ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short runs (~15 s in all)")
    ap.add_argument("--duration", type=float, help="measured seconds per case (default 6, quick 1.5)")
    ap.add_argument("--warmup", type=float, help="warm-up seconds per case (default 1.5, quick 1.1)")
    ap.add_argument("--window", type=int, default=DEFAULT_WINDOW, help=f"outstanding Interests (default {DEFAULT_WINDOW})")
    ap.add_argument("--cases", default="raw-udp-relay,udp-1hop,unix-1hop,udp-3hop",
                    help="comma-separated subset of the cases")
    ap.add_argument("--no-pin", action="store_true", help="do not pin processes to cores")
    ap.add_argument("--spread-3hop", action="store_true",
                    help="let the three daemons of udp-3hop use every core (default: share the daemon core)")
    ap.add_argument("--no-spin", action="store_true",
                    help="let the load generator sleep in epoll when idle (default: busy-poll its own core)")
    ap.add_argument("--runner", action="store_true", help="start daemons with the bench runner, not `python -m icnd run`")
    ap.add_argument("--json-only", action="store_true", help="print only the JSON lines")
    ap.add_argument("--profile", action="store_true", help="then run udp-1hop with the daemon under cProfile")
    ap.add_argument("--relay-process", type=int, metavar="PRODUCER_PORT", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if opts.relay_process is not None:
        relay_main(opts.relay_process)
        return 0
    if not 1 <= opts.window <= RING // 4:
        ap.error("--window out of range")
    opts.quiet = opts.json_only
    opts.duration = opts.duration or (1.5 if opts.quick else 6.0)
    opts.warmup = opts.warmup if opts.warmup is not None else (1.1 if opts.quick else 1.5)
    cases = [c.strip() for c in opts.cases.split(",") if c.strip()]
    known = ("raw-udp-relay", "udp-1hop", "unix-1hop", "udp-3hop")
    for c in cases:
        if c not in known:
            ap.error(f"unknown case {c!r}; known: {', '.join(known)}")
    daemon_cpus, gen_cpus = (None, None) if opts.no_pin else C.cpu_plan()
    opts.daemon_cpus = daemon_cpus
    opts.daemon3_cpus = None if opts.spread_3hop else daemon_cpus
    opts.spin = bool(gen_cpus) and not opts.no_spin  # spin only on a core of its own
    C.pin(0, gen_cpus)
    quiet = opts.quiet
    t0 = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="icnd-bench-")
    C.log(f"forward: window {opts.window}, {CONTENT_SIZE}-byte content, warm-up {opts.warmup:g}s + "
          f"{opts.duration:g}s per case; daemon cpus {sorted(daemon_cpus) if daemon_cpus else 'any'}, "
          f"load generator cpus {sorted(gen_cpus) if gen_cpus else 'any'}", quiet)

    results: dict[str, Case] = {}
    try:
        try:
            ceil_udp, ceil_stream = loadgen_ceiling(opts)
        except Exception as exc:
            ceil_udp = ceil_stream = 0.0
            C.log(f"load generator ceiling: failed: {exc}", quiet)
        else:
            C.log(f"load generator ceiling (no forwarder): udp {ceil_udp:,.0f}/s, unix stream {ceil_stream:,.0f}/s", quiet)
        runners = {
            "raw-udp-relay": lambda: case_relay(opts, workdir),
            "udp-1hop": lambda: case_udp_1hop(opts, workdir),
            "unix-1hop": lambda: case_unix_1hop(opts, workdir),
            "udp-3hop": lambda: case_udp_3hop(opts, workdir),
        }
        for name in cases:
            C.log(f"{name}...", quiet)
            try:
                res, note, how = runners[name]()
            except Exception as exc:
                results[name] = Case(name, None, error=f"{type(exc).__name__}: {exc}")
                C.log(f"  {name}: FAILED: {type(exc).__name__}: {exc}", quiet)
                continue
            results[name] = Case(name, res, note, how=how)
            p50, p99 = res.latency()
            C.log(f"  {res.rate:,.0f} exchanges/s, p50 {p50:.2f} ms, p99 {p99:.2f} ms "
                  f"({res.completed} in {res.elapsed:.2f}s; {res.loss_note()}); {res.cpu_note()}"
                  + (f"; daemon ({how}) counters: {note}" if how else ""), quiet)
        if opts.profile:
            profile_daemon(opts, workdir)
    finally:
        C.stop_all()
        for f in os.listdir(workdir):
            try:
                os.unlink(os.path.join(workdir, f))
            except OSError:
                pass
        try:
            os.rmdir(workdir)
        except OSError:
            pass

    base = results.get("raw-udp-relay")
    base_res = base.res if base and base.res and base.res.completed else None
    base_rate = base_res.rate if base_res else 0.0
    base_us = base_res.us_per_exchange if base_res else float("nan")
    lines = []
    table = []
    for name in cases:
        c = results[name]
        if c.res is None:
            table.append(f"{name:<15} {'FAILED':>11}  {c.error}")
            lines.append({"bench": "forward", "case": name, "value": None, "unit": "exchanges/s", "error": c.error})
            continue
        res = c.res
        p50, p99 = res.latency()
        line = {"bench": "forward", "case": name, "value": round(res.rate), "unit": "exchanges/s"}
        ratio = None
        if name != "raw-udp-relay" and base_rate:
            ratio = res.rate / base_rate
            line.update(baseline=round(base_rate), ratio=round(ratio, 2))
        el = res.elapsed or float("nan")
        fwd_cpu = sum(res.target_cpu) / el
        other = res.other_cpu / el
        us = res.us_per_exchange
        contended = other > CONTENDED
        line.update(
            p50_ms=round(p50, 3), p99_ms=round(p99, 3), completed=res.completed, sent=res.sent,
            timeouts=res.timeouts, nacks=res.nacks,
            cpu_us_per_exchange=_r(us, 1), forwarder_cpu=_r(fwd_cpu, 2), loadgen_busy=_r(res.loadgen_busy, 2),
            other_cpu=_r(other, 2), contended=contended, bound_by=res.bottleneck,
        )
        if name != "raw-udp-relay" and base_rate and us == us and base_us == base_us:
            line["cpu_ratio"] = round(base_us / us, 3)  # relay CPU per exchange / this case's
        line.update(
            window=opts.window, content_bytes=CONTENT_SIZE, duration_s=round(res.elapsed, 2),
            loadgen_ceiling=round(ceil_stream if name == "unix-1hop" else ceil_udp),
        )
        if c.how:
            line["daemon"] = c.how
        if name in ("udp-1hop", "unix-1hop"):
            line["meets_target"] = bool(res.rate >= TARGET_RATE and (ratio is None or ratio >= TARGET_RATIO))
        lines.append(line)
        r = f"{ratio:.2f}" if ratio is not None else "-"
        table.append(f"{name:<15} {res.rate:>11,.0f} {C.fmt_ms(p50):>7} {C.fmt_ms(p99):>7} {r:>6} "
                     f"{us:>8.1f} {fwd_cpu:>5.0%} {other:>6.0%}{' !' if contended else '  '} "
                     f"{res.bottleneck:<15} {res.loss_note()}")
    if not quiet:
        print()
        print(f"{'case':<15} {'exchange/s':>11} {'p50 ms':>7} {'p99 ms':>7} {'ratio':>6} "
              f"{'cpu us/x':>8} {'fwd':>5} {'others':>6}   {'bound by':<15} losses")
        for row in table:
            print(row)
        if "raw-udp-relay" in cases and not base_rate:
            print("baseline raw-udp-relay could not run: no ratios")
        print(f"cpu us/x: CPU time of the forwarder process(es) per exchange; fwd: their share of a core; "
              f"others: CPU used meanwhile by other processes on the machine ('!': over {CONTENDED:.0%} of a "
              f"core, the numbers are disturbed); bound by: what saturated (forwarder >= 90% of a core, "
              f"load generator busy >= 90%, other processes, or none: latency-bound).")
        print(f"load generator ceiling: udp {ceil_udp:,.0f}/s, unix {ceil_stream:,.0f}/s; "
              f"target >= {TARGET_RATE:,}/s and >= {TARGET_RATIO} of the relay (1-hop cases); "
              f"python {platform.python_version()}; {time.perf_counter() - t0:.0f}s")
        print()
    for line in lines:
        C.emit_json(line)
    return 0


def _r(v: float, nd: int) -> float | None:
    return None if v != v else round(v, nd)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("forward: interrupted", file=sys.stderr)
        sys.exit(130)
