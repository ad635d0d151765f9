"""The client: the one door applications use to reach their node.

`icnd.client.facade`: `connect` and the `Client` applications call;
`icnd.client.face_endpoint`: the `icnd.endpoint.Endpoint` implementation
over the client's face to its node, which `Client` builds on.
"""

from icnd.client.facade import Client, connect

__all__ = ["Client", "connect"]
