"""Data-oriented collective reduction: groups, contributions and aggregate names.

The pieces (the protocol is in docs/reduction.md):

- `group`: the signed, versioned group descriptor (members, rendezvous
  nodes, segment size, ops) and the names built from it.
- `segment`: the content of contribution and aggregate segments (a small
  msgpack header, then the raw array bytes) and the combining arithmetic.
- `contrib`: the node's store of its members' contributions, which answers
  contribution Interests (holding them until the member contributes).
- the in-network part lives in the forwarder: `icnd.core.aggregate`.
"""

from icnd.reduction.group import GroupDescriptor, Member, ReduceRequest
from icnd.reduction.segment import SegmentMeta

__all__ = ["GroupDescriptor", "Member", "ReduceRequest", "SegmentMeta"]
