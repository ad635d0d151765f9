"""Faces: transports and their link services.

A face (transport) moves whole packets as ``bytes`` and nothing else: see
`icnd.faces.base` for the contract every face keeps.  Its link service
(`icnd.faces.service`) turns those bytes into packets and back.
"""

from icnd.faces.base import Face, FaceCounters, FaceLimits, Listener, ListenerCounters, OnNewFace, OnReceive
from icnd.faces.endpoints import connect_face, open_listener
from icnd.faces.memory import MemoryFace, memory_face_pair
from icnd.faces.permanent import DEFAULT_RECONNECT, PermanentFace, ReconnectPolicy
from icnd.faces.service import LinkService, NativeLinkService, NothingToDeliver, Unsendable
from icnd.faces.stream import StreamFace, StreamListener, connect_stream, open_stream_listener
from icnd.faces.udp import MAX_DATAGRAM, UdpFace, UdpListener, connect_udp, open_udp_listener
from icnd.faces.uri import DEFAULT_PORT, FaceUri, parse_face_uri

__all__ = [
    "DEFAULT_PORT",
    "DEFAULT_RECONNECT",
    "MAX_DATAGRAM",
    "Face",
    "FaceCounters",
    "FaceLimits",
    "FaceUri",
    "LinkService",
    "Listener",
    "ListenerCounters",
    "MemoryFace",
    "NativeLinkService",
    "NothingToDeliver",
    "OnNewFace",
    "OnReceive",
    "PermanentFace",
    "ReconnectPolicy",
    "StreamFace",
    "StreamListener",
    "UdpFace",
    "UdpListener",
    "Unsendable",
    "connect_face",
    "connect_stream",
    "connect_udp",
    "memory_face_pair",
    "open_listener",
    "open_stream_listener",
    "open_udp_listener",
    "parse_face_uri",
]
