"""A consumer asks for a round's segments in ascending order, `window` at a time (issue #30).

Consumers of one round that ask for the same segments at about the same
time meet in the rendezvous's PIT: each segment is aggregated once.  When
each consumer started one task per segment, trio ran them in its batch
order, reversed half the time, and a 64 MiB round over shaped links had its
segments aggregated twice.  The real `consumer.reduce` against an endpoint
that answers every request at once (in random order within a window) and
records which segment each asked for.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import trio

from icnd.codec import encode
from icnd.packet import ContentType, Data, Interest
from icnd.reduction import consumer
from icnd.reduction.group import GroupDescriptor, ReduceRequest
from icnd.reduction.segment import SegmentMeta, pack, plan
from icnd.security import DigestKey

SEG_BYTES = 1024
ARRAY = np.arange(64 * SEG_BYTES // 8, dtype=np.int64)  # 64 segments


class Recording:
    """The part of `icnd.endpoint.Endpoint` `reduce` uses; answers each
    request after a random short wait, so answers arrive out of order."""

    def __init__(self, seed: int) -> None:
        self.desc = GroupDescriptor.create("g", ["w1", "w2"], rendezvous=["r"], seg_bytes=SEG_BYTES)
        self.wire = encode(DigestKey().sign(self.desc.to_data()))
        self.asked: list[int] = []
        self.rng = random.Random(seed)

    async def command(self, module: str, verb: str, **args: Any) -> Any:
        assert (module, verb) == ("group", "show")
        return {"descriptor": self.wire}

    async def verify(self, data: Data, **kw: Any) -> None:
        return None

    async def express(self, interest: Interest, *, timeout: float, retx: float | None = None) -> Data:
        seg = ReduceRequest.parse(interest).seg
        self.asked.append(seg)
        await trio.sleep(self.rng.uniform(0, 0.01))
        seg_elems, nseg, _ = plan(ARRAY.dtype, ARRAY.shape, SEG_BYTES)
        meta = SegmentMeta(ARRAY.dtype.str, ARRAY.shape, nseg, seg, (0, 1))
        return Data(interest.name, pack(meta, ARRAY[seg * seg_elems:(seg + 1) * seg_elems]), ContentType.AGGREGATE)


def test_segments_are_asked_for_in_ascending_order_window_by_window() -> None:
    window = 8
    for seed in range(12):  # trio reverses a batch of new tasks at random: one run proves little
        ep = Recording(seed)

        async def main() -> Any:
            return await consumer.reduce(ep, "g", 1, "sum", timeout=10.0, partial=False,  # type: ignore[arg-type]
                                         window=window)

        result = trio.run(main)
        np.testing.assert_array_equal(result.array, ARRAY)
        assert sorted(ep.asked) == list(range(64))  # each segment once
        # never ahead of the lowest segment still missing by more than the window
        for k, seg in enumerate(ep.asked):
            assert seg < k + window, (seed, ep.asked[:k + 1])
