"""Faces: transports and framing.  A face moves whole packets (``bytes``) and nothing else.

See `icnd.faces.base` for the contract every face keeps.
"""

from icnd.faces.base import Face, FaceCounters, Listener, OnNewFace, OnReceive
from icnd.faces.endpoints import connect_face, open_listener
from icnd.faces.memory import MemoryFace, memory_face_pair
from icnd.faces.stream import StreamFace, StreamListener, connect_stream, open_stream_listener
from icnd.faces.udp import MAX_DATAGRAM, UdpFace, UdpListener, connect_udp, open_udp_listener
from icnd.faces.uri import DEFAULT_PORT, FaceUri, parse_face_uri

__all__ = [
    "DEFAULT_PORT",
    "MAX_DATAGRAM",
    "Face",
    "FaceCounters",
    "FaceUri",
    "Listener",
    "MemoryFace",
    "OnNewFace",
    "OnReceive",
    "StreamFace",
    "StreamListener",
    "UdpFace",
    "UdpListener",
    "connect_face",
    "connect_stream",
    "connect_udp",
    "memory_face_pair",
    "open_listener",
    "open_stream_listener",
    "open_udp_listener",
    "parse_face_uri",
]
