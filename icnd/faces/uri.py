"""Face URIs: ``udp://HOST:PORT``, ``tcp://HOST:PORT``, ``unix:///abs/path``.

HOST is an IPv4 address, a bracketed IPv6 address (``[::1]``, optionally with
a zone, ``[fe80::1%eth0]``) or a DNS name; PORT defaults to 6363 and may be 0
(an ephemeral port, for listeners).  Parsing is strict: anything else is a
`ValueError` whose message quotes the URI and says what is wrong.

`parse_face_uri` is the one parser: faces, neighbours, routes and listeners
all use it, so a mistake reads the same wherever it is made.  A listener
(`parse_listen_uri`) also takes a bare HOST, for UDP and TCP on port 6363.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

DEFAULT_PORT = 6363
SCHEMES = ("udp", "tcp", "unix")

_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_-]{1,63})*\.?$")
_EXPECTED = "expected udp://HOST:PORT, tcp://HOST:PORT or unix:///path"


@dataclass(frozen=True, slots=True)
class FaceUri:
    scheme: str  # "udp", "tcp" or "unix"
    host: str  # without brackets; "" for unix
    port: int | None  # None for unix
    path: str  # absolute path for unix; "" otherwise

    def __str__(self) -> str:
        if self.scheme == "unix":
            return f"unix://{self.path}"
        assert self.port is not None
        return format_inet_uri(self.scheme, self.host, self.port)


def format_inet_uri(scheme: str, host: str, port: int) -> str:
    """``scheme://host:port`` with IPv6 hosts in brackets."""
    if ":" in host:
        return f"{scheme}://[{host}]:{port}"
    return f"{scheme}://{host}:{port}"


def parse_face_uri(uri: str) -> FaceUri:
    """Parse and validate a face URI; raise `ValueError` with a clear message."""
    if not isinstance(uri, str):
        raise ValueError(f"face URI must be a string, not {type(uri).__name__}")
    scheme, sep, rest = uri.partition("://")
    if not sep:
        raise ValueError(f"bad face URI {uri!r}: no scheme; {_no_scheme_hint(uri)}")
    scheme = scheme.lower()
    if scheme not in SCHEMES:
        raise ValueError(f"bad face URI {uri!r}: unknown scheme {scheme!r}; {_EXPECTED}")
    if scheme == "unix":
        return FaceUri("unix", "", None, _parse_unix_path(uri, rest))
    host, port = _parse_authority(uri, rest)
    return FaceUri(scheme, host, port, "")


def parse_listen_uri(text: str) -> list[FaceUri]:
    """What a listener setting (``--listen``, ``listen``) means: a face URI, or a bare HOST (an
    IPv4 address, a DNS name, an IPv6 address with or without brackets) for UDP and TCP on
    `DEFAULT_PORT`.  Anything else is `parse_face_uri`'s error (``127.0.0.1:7000``: no scheme)."""
    if "://" not in text:
        host = text[1:-1] if text.startswith("[") and text.endswith("]") else text
        if _is_ipv6(host) or (":" not in host and _HOSTNAME.match(host)):
            return [FaceUri(scheme, host, DEFAULT_PORT, "") for scheme in ("udp", "tcp")]
    return [parse_face_uri(text)]


def _is_ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return True


def _no_scheme_hint(uri: str) -> str:
    """What to write instead of `uri`, a face URI without its scheme."""
    try:
        _parse_authority(uri, uri)
    except ValueError:
        return _EXPECTED
    return f"did you mean udp://{uri} or tcp://{uri}?"


def _parse_unix_path(uri: str, path: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"bad face URI {uri!r}: a unix URI needs an absolute path, as in unix:///run/icnd.sock")
    if path.endswith("/"):
        raise ValueError(f"bad face URI {uri!r}: the path names a directory, not a socket")
    if "\x00" in path:
        raise ValueError(f"bad face URI {uri!r}: the path contains a NUL byte")
    return path


def _parse_authority(uri: str, rest: str) -> tuple[str, int]:
    for ch in "/?#@":
        if ch in rest:
            raise ValueError(f"bad face URI {uri!r}: unexpected {ch!r}; {_EXPECTED}")
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0:
            raise ValueError(f"bad face URI {uri!r}: '[' without a closing ']'")
        host, after = rest[1:close], rest[close + 1 :]
        if not _is_ipv6(host):
            raise ValueError(f"bad face URI {uri!r}: {host!r} is not an IPv6 address")
        if after and not after.startswith(":"):
            raise ValueError(f"bad face URI {uri!r}: unexpected {after!r} after ']'")
        port_text = after[1:] if after else None
    else:
        if rest.count(":") > 1:
            raise ValueError(f"bad face URI {uri!r}: an IPv6 host must be in brackets, as in udp://[::1]:6363")
        host, colon, port_text = rest.partition(":")
        if not colon:
            port_text = None
        if not host:
            raise ValueError(f"bad face URI {uri!r}: no host; {_EXPECTED}")
        if not _HOSTNAME.match(host):
            raise ValueError(f"bad face URI {uri!r}: {host!r} is not a valid host name or IPv4 address")
    if port_text is None:
        return host, DEFAULT_PORT
    if not port_text.isascii() or not port_text.isdigit():
        raise ValueError(f"bad face URI {uri!r}: port {port_text!r} is not a number")
    port = int(port_text)
    if port > 65535:
        raise ValueError(f"bad face URI {uri!r}: port {port} is out of range 0-65535")
    return host, port
