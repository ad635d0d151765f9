#!/usr/bin/env python3
"""What verifying an aggregate costs per MiB, against moving it (issue #30, part 2).

An aggregate reaches its consumers as segments.  Each scheme below is what a
rendezvous pays to sign a MiB of aggregate and a consumer's node pays to
check it, measured here with icnd's own primitives (`icnd.security`, the
packet codec) on this machine, in the same run as the baseline: moving that
MiB once through a Unix socket (send + receive, as a node hands a segment to
a local client), which every scheme pays anyway.

- ``per-segment-ed25519`` (what icnd does): every segment Data is signed with
  Ed25519 (SHA-256 of the signed portion + one signature) and each consumer
  verifies it (SHA-256 + one verification);
- ``digest-list``: one Ed25519-signed list of the segments' SHA-256 digests
  per round, each segment checked against it (SHA-256 only), the list's one
  signature amortized over the round's segments;
- ``sha256``: the hashing alone, the floor of any scheme that checks bytes.

Output: one JSON line per scheme and segment size:
``{"bench": "verify_cost", "case": "<scheme>-<segment>", "value": <ms per
MiB, sign + verify>, "unit": "ms/MiB", "baseline": <ms per MiB moved>,
"ratio": value / baseline, "sign_ms", "verify_ms"}``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import threading
import time
from typing import Callable

from icnd.codec import signed_portion_of_wire
from icnd.name import Name, segment
from icnd.packet import Data
from icnd.security import Ed25519Key, Ed25519VerifyKey

MIB = 1024 * 1024


def best_of(reps: int, fn: Callable[[], None]) -> float:
    """The fastest of `reps` runs of `fn`, in seconds."""
    best = float("inf")
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def move_ms_per_mib(total: int, reps: int) -> float:
    """Milliseconds to push `total` bytes through a Unix socket pair, per MiB."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    chunk = os.urandom(256 * 1024)

    def run() -> None:
        def reader() -> None:
            left = total
            buf = bytearray(256 * 1024)
            while left:
                left -= b.recv_into(buf, min(len(buf), left))

        t = threading.Thread(target=reader)
        t.start()
        sent = 0
        while sent < total:
            sent += a.send(chunk[:min(len(chunk), total - sent)])
        t.join()

    try:
        return best_of(reps, run) * 1000 / (total / MIB)
    finally:
        a.close()
        b.close()


def schemes(seg: int, total: int, reps: int) -> dict[str, tuple[float, float]]:
    """scheme -> (sign ms per MiB, verify ms per MiB) for segments of `seg` bytes."""
    key = Ed25519Key.generate(Name("/bench/KEY/x"))
    verifier = Ed25519VerifyKey.from_bytes(key.public_bytes())
    content = os.urandom(seg)
    count = max(1, total // seg)
    datas = [Data(Name("/reduce/g/sum/1").append_wire(segment(i)), content) for i in range(count)]
    signed = [key.sign(d) for d in datas]
    mib = count * seg / MIB

    def sign_each() -> None:
        for d in datas:
            key.sign(d)

    def verify_each() -> None:
        for d in signed:
            if not verifier.verifies(signed_portion_of_wire(d), d.sig_value):
                raise AssertionError("a signature did not verify")

    def hash_each() -> None:
        for _ in range(count):
            hashlib.sha256(content).digest()

    digests = b"".join(hashlib.sha256(content).digest() for _ in range(count))

    def list_sign() -> None:
        hash_each()
        key.sign_bytes(digests)

    list_sig = key.sign_bytes(digests)

    def list_verify() -> None:
        if not verifier.is_valid(digests, list_sig):
            raise AssertionError("the digest list did not verify")
        hash_each()

    out = {
        "per-segment-ed25519": (best_of(reps, sign_each), best_of(reps, verify_each)),
        "digest-list": (best_of(reps, list_sign), best_of(reps, list_verify)),
        "sha256": (best_of(reps, hash_each), best_of(reps, hash_each)),
    }
    return {k: (s * 1000 / mib, v * 1000 / mib) for k, (s, v) in out.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--total-mib", type=int, default=16, help="MiB of aggregate per measurement (default 16)")
    p.add_argument("--reps", type=int, default=5, help="runs per figure, the fastest kept (default 5)")
    p.add_argument("--segments", default="64KiB,256KiB,1MiB,4MiB", help="segment sizes")
    args = p.parse_args()
    total = args.total_mib * MIB
    move = move_ms_per_mib(total, args.reps)
    for text in args.segments.split(","):
        seg = int(text.removesuffix("KiB")) * 1024 if text.endswith("KiB") else int(text.removesuffix("MiB")) * MIB
        for scheme, (sign, verify) in schemes(seg, total, args.reps).items():
            value = sign + verify
            print(json.dumps({"bench": "verify_cost", "case": f"{scheme}-{text}", "value": round(value, 3),
                              "unit": "ms/MiB", "baseline": round(move, 3), "ratio": round(value / move, 3),
                              "sign_ms": round(sign, 3), "verify_ms": round(verify, 3),
                              "baseline_case": "unix-socket-move"}), flush=True)


if __name__ == "__main__":
    main()
