"""The daemon: one node's trio shell around the sans-IO forwarder.

- `icnd.daemon.node`: `Node`, its start-up, its one receive path and send
  path (start reading there: its docstring follows a packet through);
- `icnd.daemon.identity`, `icnd.daemon.functions`, `icnd.daemon.status`:
  the node's key, certificate and trust schema; its own hosted functions;
  its status report and the narrow view its status page reads;
- `icnd.daemon.faces`: the face table (faces, their link services and link
  emulators, face creation by URI);
- `icnd.daemon.producers`: the producer table, which answers the names the
  node itself serves (``/node/<me>/...``, published data);
- `icnd.daemon.mgmt`: the management dispatcher and one manager per concern;
- `icnd.daemon.config`, `icnd.daemon.logs`, `icnd.daemon.runtime`:
  configuration, logging and process set-up for ``icnd run``.
"""
