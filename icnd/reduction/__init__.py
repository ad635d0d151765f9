"""Data-oriented collective reduction: groups, contributions and aggregate names.

The pieces (the protocol is in docs/reduction.md):

- `group`: the signed, versioned group descriptor (members, rendezvous
  nodes, segment size, ops) and the names built from it.
- `segment`: the content of contribution and aggregate segments (a small
  msgpack header, then the raw array bytes) and the combining arithmetic.
- `contrib`: the node's store of its members' contributions, which answers
  contribution Interests (holding them until the member contributes).
- `aggregate`: the in-network part, the forwarder's handler of the
  ``/reduce`` namespace (`icnd.core.hooks`).
- `consumer`: the application's side (create, contribute, reduce), written
  against `icnd.endpoint.Endpoint`.
"""

from icnd.reduction.group import GroupDescriptor, Member, ReduceRequest
from icnd.reduction.segment import SegmentMeta

__all__ = ["GroupDescriptor", "Member", "ReduceRequest", "SegmentMeta"]
