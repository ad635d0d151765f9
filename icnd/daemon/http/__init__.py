"""The node's read-only HTTP face for people and monitoring: a status page at
``/``, the status report as JSON at ``/status.json`` and Prometheus metrics at
``/metrics`` (``icnd run --http HOST:PORT``; docs/management.md#http-status-page-and-metrics).

- `server`: the HTTP shell -- hypercorn's trio worker running a small ASGI
  app on the node's own trio loop, bounded so a slow or hostile client costs
  a task and a few KiB, never the forwarding loop's time: the loop takes a
  bounded snapshot, a worker thread formats it.
- `page`: what the page shows, at most `page.MAX_ROWS` rows per table, taken
  from the node's `status()` and its managers' tables (the same functions
  the management commands answer with: one source of truth), rendered with
  jinja2 (autoescaped: names come from the network), with the traffic plot
  as inline SVG.
- `metrics`: a `prometheus_client` collector reading the same report at
  scrape time (per-face series for at most `metrics.MAX_FACE_SERIES` faces).

All of it reads the node through `icnd.daemon.status.StatusView`: its status
report and the few tables it lists, never the node itself.

Nothing here is imported by the node unless ``--http`` is given, and nothing
here decides anything about forwarding.
"""
