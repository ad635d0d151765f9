"""The sans-IO forwarding core: tables and pipelines, no trio, no sockets.

- ``tables/``: the FIB, PIT, Content Store, dead-nonce list and reflexive
  table (each states its invariants at its top), and the per-face quota
  they share;
- ``fw/``: the forwarder (``forwarder.py``: NFD's pipelines), the strategy
  base class, one file per strategy, and the strategy choice table;
- ``hooks.py``: the namespace-handler contract through which a feature
  (in-network aggregation) takes over a name space (its protocol is
  defined beside the forwarder, which it names);
- ``timers.py``: the one timer mechanism.

It imports only itself and the vocabulary (`icnd.name`, `icnd.packet`,
`icnd.codec`, `icnd.security`, `icnd.errors`).
"""

from icnd.core.fw.forwarder import HOOK_FACE, Forwarder, NamespaceHandler, Send

__all__ = ["HOOK_FACE", "Forwarder", "NamespaceHandler", "Send"]
