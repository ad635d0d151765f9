"""Helpers for tests of icnd and of applications built on it: real processes
started, awaited and cleaned up.

    processes.py   `Daemon` (an ``icnd run`` subprocess, ready when it prints
                   ``ready`` and answers ``status``), `run_cli` (``python -m icnd ...``), `gone`,
                   `wait_exit`, `short_tempdir` (room for Unix socket paths)
    topology.py    `start_background`: ``icnd topo up`` in a child process,
                   returned once its state file says ready

Nothing in icnd imports this package: it sits at the top of the layering,
beside the CLI.  For in-process tests, `icnd.sim` (a virtual clock) and
`icnd.topology.launch` (daemons on loopback) are the tools.
"""
