"""Collective communication by name: a group seen as ranks, the MPI set of
collectives over named data (docs/collectives.md, interface §15).

`Communicator` is made by `icnd.Client.communicator`; its ``i<name>``
methods return a `Request`."""

from icnd.collective.communicator import Communicator, Request

__all__ = ["Communicator", "Request"]
