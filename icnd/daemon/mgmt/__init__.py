"""Management: nfdc-like commands over the local socket, one manager per concern.

A command is an Interest ``/localhost/icnd/<module>/<verb>/params-sha256=…``
whose application parameters are a msgpack map of arguments.  The answer is
a Data with the same name whose content is a msgpack map:
``{"ok": true, "result": …}`` or ``{"ok": false, "code": N, "error": "…"}``
(codes follow HTTP: 400 bad arguments, 404 no such thing, 409 conflict,
500 internal).  The node's receive path hands these Interests to the
`Dispatcher` (`icnd.daemon.mgmt.dispatcher`) before the forwarder, and only
from local faces of icnd's own format; from any other face the forwarder
refuses /localhost with Nack *prohibited*.  The full command list is in
docs/management.md.

Each manager is handed only what it manages and offers its commands
(``commands()``: ``(module, verb) -> handler``):

- `faces.FaceManager` (``face/*``): the node's face table;
- `routes.RouteManager` (``route/*``): the FIB, and the face table to name faces;
- `cs.CsManager` (``cs/*``): the Content Store;
- `strategy.StrategyManager` (``strategy/*``): the strategy choice table;
- `status.StatusManager` (``status/get``): the node's status report;
- `objects.ObjectManager` (``repo/*``, ``object/*``): the node's published
  data (`icnd.objects.service.ObjectService`);
- `groups.GroupManager` (``group/*``, ``reduce/contribute``): groups and
  contributions (`icnd.reduction.service.ReductionService`);
- `routing.RoutingManager` (``routing/*``): announcements and the routing
  state, through the routing shell's `routing.RoutingControl` (all 409
  when the node runs without routing);
- `functions.FunctionReports` (``function/report``): the functions local
  applications host (`Client.host`), as their hosts report them, for the
  status page.

Adding a command: a handler in the manager of its concern (or a new manager
given its tables, added to the dispatcher in ``Node.bind``), and a line in
docs/management.md.  NDN applications' ``/localhost/nfd`` commands are
answered by `icnd.ndn.management` instead.
"""
