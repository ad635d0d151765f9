"""The client's former single module, kept so that ``from icnd.client.door import ...`` goes on working.

The façade (`Client`, `connect`, `load_identity`, `load_key`) lives in
`icnd.client.facade`, the `icnd.endpoint.Endpoint` implementation it builds
on in `icnd.client.face_endpoint`; `unwrap` is `icnd.excgroups.lone`.
"""

from icnd.client.facade import Client, connect, load_identity, load_key
from icnd.excgroups import lone as unwrap

__all__ = ["Client", "connect", "load_identity", "load_key", "unwrap"]
