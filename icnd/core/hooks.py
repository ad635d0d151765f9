"""Namespace handlers: how a feature takes over the names under one first component.

The forwarder knows no application namespace.  A feature that forwards its
own names in a way no strategy can -- in-network aggregation answers
``/reduce`` requests itself, from sub-requests it sends
(`icnd.reduction.aggregate`) -- is a *namespace handler*, given to the
forwarder at construction as a mapping from a first name component (wire
form) to the handler::

    aggregator = Aggregator(node_name="a")
    fw = Forwarder(hooks={REDUCE: aggregator})

Where the forwarder would ask a strategy, it looks the first component up
with one dict probe, no dearer than the comparison with one namespace it
replaces; names outside every handler's namespace never reach a handler.

The contract, in the order a packet meets it:

1. `attach`, once, at construction: the handler gets the forwarder and its
   own *hook face*, a local face of the forwarder (`HOOK_FACE` for the first
   handler, ``HOOK_FACE - 1`` for the next, ...: shells number their faces
   from 1).  One handler may serve several namespaces; it is attached once.
2. Interest pipeline: an Interest under a handler's namespace that the
   forwarder would hand to a strategy (new entry, or a retransmission to
   forward again) goes to `route` instead; it never takes the forwarder's
   composed best-route fast path.  The handler forwards it with the
   forwarder's `send_interest`/`reject`, or keeps it (`record_out` on its
   hook face) to answer later.
3. Nack pipeline: a Nack for an entry under the namespace goes to
   `after_nack` instead of the strategy.
4. The hook face: the handler puts packets into the pipelines as if they
   arrived on its hook face (`Forwarder.on_incoming_interest` /
   `on_incoming_data` / `on_incoming_nack` with its face), so they go
   through the PIT and the Content Store like any other.  What the
   pipelines send to a hook face is not returned to the shell: the
   forwarder hands each such packet to its handler's `deliver`, then calls
   every handler's `process` (which may send more), round after round until
   no handler processed anything, before it returns its actions.
5. Cost while idle: none beyond one flag test per call.  The forwarder runs
   step 4 only while a handler may have work: from its calling `route` or
   `on_face_down` until a round in which no handler processed anything and
   none reports `pending`.  A handler therefore keeps `pending` true for as
   long as packets may come back to its face (sub-requests outstanding),
   and acquires work only through `route`, `on_face_down` or timers it set
   (`Forwarder.schedule`) while pending.
6. `on_face_down` when a face goes; `stats` adds the handler's table sizes
   to `Forwarder.table_sizes` (keys of its own, e.g. ``agg_*``).

The protocol itself (`NamespaceHandler`) and `HOOK_FACE` are defined beside
the `Forwarder` (`icnd.core.fw.forwarder`), since each names the other;
they are exported here.
"""

from icnd.core.fw.forwarder import HOOK_FACE, NamespaceHandler

__all__ = ["HOOK_FACE", "NamespaceHandler"]
