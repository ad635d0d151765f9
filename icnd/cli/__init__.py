"""The ``icnd`` command: run a node, operate it, use the network from a shell.

    icnd run [--config FILE] [--name /node/NAME] [--listen URI ...] ...
    icnd status | face | route | cs | strategy ...     (nfdc-like, over the local socket)
    icnd announce | withdraw PREFIX, icnd routing      (link-state routing)
    icnd ping | fetch | publish | poke | call | reduce | contribute | group | keygen | cert | topo
    icnd exec -n N [--socket S ...] -- PROGRAM [ARGS ...]   (start a collective job, like mpirun)

Exit codes (the contract in interface.md §3-§5): 0 success; 1 the operation
failed (timeout, Nack, refused command, no node to talk to); 2 usage errors
(argparse's own), bad configuration or a daemon that cannot start.  Expected
errors are one line, ``icnd: error: <message>``, on stderr -- never a
traceback.  Management commands print their result as aligned tables, or
with ``--json`` exactly the result the node returned (see docs/management.md);
every other command that prints a result has ``--json`` too.  ``--socket``
is accepted before the command as well as after it, and made absolute where
it is parsed (`icnd.cli.options.socket_path`).

One module per command group: `run` (the daemon and its configuration),
`nfdc` (status, face, route, cs, strategy: one table of management
commands), `routing` (announce, withdraw, routing: rows of the same
table), `data` (ping, fetch, publish, poke), `compute` (call, submit, result), `reduce`
(reduce, contribute, group), `exec` (icnd exec: start a collective job),
`keys` (keygen, cert), `topo` (topo up/down/sim);
`app` assembles the parser and runs `main`.  Shared pieces: `options`
(argument types, common options), `output` (tables, JSON), `session` (one
connection per command), `errors` (`CliError`).
"""

from icnd.cli.app import build_parser, main
from icnd.cli.errors import CliError
from icnd.cli.run import build_config

__all__ = ["CliError", "build_config", "build_parser", "main"]
