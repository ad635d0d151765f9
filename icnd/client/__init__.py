"""The client: the one door applications use to reach their node (`icnd.client.door`)."""

from icnd.client.door import Client, connect

__all__ = ["Client", "connect"]
