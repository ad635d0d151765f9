"""Open a face or a listener from a face URI, whatever its scheme.

`open_listener` is what ``--listen URI`` needs; `connect_face` what
``face create URI`` needs when there is no listener to reuse.  A node that
has a UDP listener should prefer ``listener.face_to(host, port)`` for UDP
peers, so that its datagrams leave from its well-known port.
"""

from __future__ import annotations

from icnd.faces.base import DEFAULT_LIMITS, Face, FaceLimits, Listener, OnNewFace
from icnd.faces.recvbuf import ByteBudget
from icnd.faces.stream import connect_stream, open_stream_listener
from icnd.faces.udp import connect_udp, open_udp_listener
from icnd.faces.uri import FaceUri, parse_face_uri


async def open_listener(
    uri: str | FaceUri, *, on_new_face: OnNewFace, limits: FaceLimits = DEFAULT_LIMITS,
    eager_frames: ByteBudget | None = None,
) -> Listener:
    """A `UdpListener` or `StreamListener` bound as ``uri`` says, within ``limits``;
    `eager_frames`: the frame-buffer budget a stream listener's faces share (`open_stream_listener`)."""
    parsed = parse_face_uri(uri) if isinstance(uri, str) else uri
    if parsed.scheme == "udp":
        assert parsed.port is not None
        return await open_udp_listener(parsed.host, parsed.port, on_new_face=on_new_face, limits=limits)
    return await open_stream_listener(parsed, on_new_face=on_new_face, limits=limits, eager_frames=eager_frames)


async def connect_face(uri: str | FaceUri) -> Face:
    """A persistent face to ``uri`` (UDP: on its own ephemeral socket)."""
    parsed = parse_face_uri(uri) if isinstance(uri, str) else uri
    if parsed.scheme == "udp":
        return await connect_udp(parsed)
    return await connect_stream(parsed)
