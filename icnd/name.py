"""Names: immutable sequences of typed components.

A component is held in its *wire form*: one type byte followed by the value
bytes (``b"\\x08hello"`` is the generic component ``hello``).  A `Name` is a
tuple of wire-form components, so hashing, equality, prefix tests and the
msgpack encoding all work on plain ``bytes`` with no per-component objects.
Users see components through `Component` (``name[0] == b"hello"`` for a
generic component).

Invariants:
- every component is non-empty in wire form (it always has its type byte);
- at most ``MAX_COMPONENTS`` components and ``MAX_NAME_BYTES`` bytes of
  wire-form components; a longer name raises ``ValueError`` locally and
  ``DecodeError`` when decoded from the network;
- names are totally ordered component by component (type byte, then value
  bytes); a prefix sorts before every name it is a prefix of, so all names
  under a prefix are contiguous in sorted order (the Content Store relies on
  it).
"""

from __future__ import annotations

from typing import Iterable, Iterator, TypeGuard, Union, overload

# Component type codes (NDN naming-convention numbers where they exist).
T_DIGEST = 0x01  # sha256digest=  implicit SHA-256 digest of a Data
T_PARAMS = 0x02  # params-sha256= digest of an Interest's parameters
T_GENERIC = 0x08
T_KEYWORD = 0x20
T_SEGMENT = 0x32  # seg=
T_VERSION = 0x36  # v=
T_RNP = 0xF0  # rnp=  reflexive name prefix (icnd-specific)

MAX_COMPONENTS = 64
MAX_NAME_BYTES = 2048
MAX_COMPONENT_BYTES = 1024

_TYPE_BY_LABEL = {
    "seg": T_SEGMENT,
    "v": T_VERSION,
    "sha256digest": T_DIGEST,
    "params-sha256": T_PARAMS,
    "rnp": T_RNP,
}
_LABEL_BY_TYPE = {t: label for label, t in _TYPE_BY_LABEL.items()}
_NUMERIC_TYPES = frozenset((T_SEGMENT, T_VERSION))
_HEX_TYPES = frozenset((T_DIGEST, T_PARAMS, T_RNP))
_HEX_LENGTHS = {T_DIGEST: 32, T_PARAMS: 32, T_RNP: 16}

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-")
_HEXDIGITS = frozenset(b"0123456789abcdefABCDEF")


def encode_nonneg(n: int) -> bytes:
    """NDN NonNegativeInteger: big-endian in 1, 2, 4 or 8 bytes."""
    if n < 0 or n >= 1 << 64:
        raise ValueError(f"number out of range for a name component: {n}")
    for size in (1, 2, 4, 8):
        if n < 1 << (8 * size):
            return n.to_bytes(size, "big")
    raise AssertionError("unreachable")


def decode_nonneg(value: bytes) -> int:
    if len(value) not in (1, 2, 4, 8):
        raise ValueError(f"bad NonNegativeInteger length {len(value)}")
    return int.from_bytes(value, "big")


class Component(bytes):
    """A name component as seen by users: its value bytes plus a `type`.

    Equality and hashing are those of the value bytes, so a generic component
    compares equal to ``b"value"``; use `type` to tell typed components apart.
    """

    type: int

    def __new__(cls, wire: bytes) -> "Component":
        obj = super().__new__(cls, wire[1:])
        obj.type = wire[0]
        return obj

    @property
    def wire(self) -> bytes:
        return bytes((self.type,)) + bytes(self)

    def to_number(self) -> int:
        return decode_nonneg(bytes(self))

    def to_uri(self) -> str:
        return component_to_uri(self.wire)

    def __repr__(self) -> str:
        return f"Component({self.to_uri()!r})"


def _percent_encode(value: bytes) -> str:
    if all(ch == 0x2E for ch in value):
        # "", "." and ".." would vanish or be path-relative in URIs; NDN writes
        # all-dot values (the empty one included) with three extra dots.
        return "..." + "." * len(value)
    return _escape(value)


def _escape(value: bytes) -> str:
    return "".join(chr(ch) if ch in _UNRESERVED else f"%{ch:02X}" for ch in value)


def _percent_decode(text: str) -> bytes:
    out = bytearray()
    raw = text.encode("utf-8")
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == 0x25:  # '%'
            hexpart = raw[i + 1 : i + 3]
            if len(hexpart) != 2:
                raise ValueError(f"truncated percent-escape in {text!r}")
            if not all(h in _HEXDIGITS for h in hexpart):
                raise ValueError(f"bad percent-escape in {text!r}")
            out.append(int(hexpart, 16))
            i += 3
        else:
            out.append(ch)
            i += 1
    return bytes(out)


def component_to_uri(wire: bytes) -> str:
    """The URI form of a wire-form component; `component_from_uri` inverts it.

    The ``label=`` forms are used only for values they can represent exactly
    (a canonical NonNegativeInteger, a hex value of the convention's length);
    any other value of a typed component is written ``<type number>=<escaped>``
    so every component survives a URI round trip.
    """
    ctype, value = wire[0], wire[1:]
    if ctype == T_GENERIC:
        return _percent_encode(value)
    label = _LABEL_BY_TYPE.get(ctype)
    if label is not None:
        if ctype in _NUMERIC_TYPES and len(value) in (1, 2, 4, 8):
            number = decode_nonneg(value)
            if encode_nonneg(number) == value:
                return f"{label}={number}"
        if ctype in _HEX_TYPES and len(value) == _HEX_LENGTHS[ctype]:
            return f"{label}={value.hex()}"
    return f"{ctype}={_escape(value)}"


def component_from_uri(text: str) -> bytes:
    """Parse one URI component (already split on '/') into wire form."""
    if "=" in text:
        label, _, rest = text.partition("=")
        ctype = _TYPE_BY_LABEL.get(label)
        if ctype is None:
            if label.isdigit() and 0 <= int(label) < 256:
                ctype = int(label)
                return bytes((ctype,)) + _percent_decode(rest)
            raise ValueError(f"unknown component type {label!r} in {text!r}")
        if ctype in _NUMERIC_TYPES:
            if not rest.isdigit():
                raise ValueError(f"{label}= needs a non-negative number, got {rest!r}")
            return bytes((ctype,)) + encode_nonneg(int(rest))
        try:
            value = bytes.fromhex(rest)
        except ValueError:
            raise ValueError(f"{label}= needs hex, got {rest!r}") from None
        if len(value) != _HEX_LENGTHS[ctype]:
            raise ValueError(f"{label}= needs {_HEX_LENGTHS[ctype]} bytes, got {len(value)}")
        return bytes((ctype,)) + value
    if text and set(text) == {"."}:
        if len(text) < 3:
            raise ValueError(f"component {text!r} is not allowed in a name URI")
        return bytes((T_GENERIC,)) + b"." * (len(text) - 3)
    return bytes((T_GENERIC,)) + _percent_decode(text)


def generic(value: bytes | str) -> bytes:
    if isinstance(value, str):
        value = value.encode("utf-8")
    return bytes((T_GENERIC,)) + value


def segment(n: int) -> bytes:
    return bytes((T_SEGMENT,)) + encode_nonneg(n)


def version(n: int) -> bytes:
    return bytes((T_VERSION,)) + encode_nonneg(n)


def digest(value: bytes) -> bytes:
    return bytes((T_DIGEST,)) + value


def params_digest(value: bytes) -> bytes:
    return bytes((T_PARAMS,)) + value


def rnp(value: bytes) -> bytes:
    if len(value) != 16:
        raise ValueError("a reflexive name prefix is 16 bytes")
    return bytes((T_RNP,)) + value


def _to_wire(comp: object) -> bytes:
    if isinstance(comp, Component):
        return comp.wire
    if isinstance(comp, str):
        return component_from_uri(comp)
    if isinstance(comp, (bytes, bytearray, memoryview)):
        return bytes((T_GENERIC,)) + bytes(comp)
    raise TypeError(f"a name component must be str or bytes, not {type(comp).__name__}")


NameLike = Union["Name", str, Iterable[Union[str, bytes, Component]]]


class Name:
    """An immutable, hashable, ordered name.

    ``Name("/a/b") == Name(["a", "b"])``.  Build from a URI, from a sequence of
    components (str components are parsed as URI components, bytes are
    generic), or from another Name.
    """

    __slots__ = ("comps", "_hash")
    comps: tuple[bytes, ...]

    def __init__(self, value: NameLike = ()) -> None:
        if isinstance(value, Name):
            comps = value.comps
        elif isinstance(value, str):
            if value in ("", "/"):
                comps = ()
            else:
                text = value[4:] if value.startswith("ndn:/") else value
                if not text.startswith("/"):
                    raise ValueError(f"a name URI starts with '/': {value!r}")
                parts = text[1:].split("/")
                if parts and parts[-1] == "":
                    parts.pop()
                comps = tuple(component_from_uri(p) for p in parts)
        else:
            comps = tuple(_to_wire(c) for c in value)
        _check(comps)
        self.comps = comps
        self._hash: int | None = hash(comps)

    @classmethod
    def from_wire(cls, comps: tuple[bytes, ...]) -> "Name":
        """Build from wire-form components the caller has already validated.

        The hash is computed on first use: the decoder builds a Name for
        every packet, and the forwarder's tables key on `comps`, not on
        Names."""
        self = object.__new__(cls)
        self.comps = comps
        self._hash = None
        return self

    # --- sequence behaviour -------------------------------------------------
    def __len__(self) -> int:
        return len(self.comps)

    def __iter__(self) -> Iterator[Component]:
        return (Component(c) for c in self.comps)

    @overload
    def __getitem__(self, index: int) -> Component: ...
    @overload
    def __getitem__(self, index: slice) -> "Name": ...
    def __getitem__(self, index: int | slice) -> "Component | Name":
        if isinstance(index, slice):
            return Name.from_wire(self.comps[index])
        return Component(self.comps[index])

    def prefix(self, n: int) -> "Name":
        """The first n components (negative n drops from the end)."""
        return Name.from_wire(self.comps[:n])

    def append(self, *comps: str | bytes | Component) -> "Name":
        """A new name with components added (str parsed as URI, bytes generic)."""
        return self.append_wire(*(_to_wire(c) for c in comps))

    def append_wire(self, *wires: bytes) -> "Name":
        comps = self.comps + wires
        _check(comps)
        return Name.from_wire(comps)

    def __add__(self, other: NameLike) -> "Name":
        return self.append_wire(*Name(other).comps)

    def is_prefix_of(self, other: "Name") -> bool:
        n = len(self.comps)
        return n <= len(other.comps) and other.comps[:n] == self.comps

    # --- identity -----------------------------------------------------------
    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(self.comps)
        return h

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Name):
            return self.comps == other.comps
        if isinstance(other, str):
            try:
                return self.comps == Name(other).comps
            except ValueError:
                return False
        return NotImplemented

    def __lt__(self, other: "Name") -> bool:
        return self.comps < other.comps

    def __le__(self, other: "Name") -> bool:
        return self.comps <= other.comps

    def __gt__(self, other: "Name") -> bool:
        return self.comps > other.comps

    def __ge__(self, other: "Name") -> bool:
        return self.comps >= other.comps

    # --- text ---------------------------------------------------------------
    def to_uri(self) -> str:
        if not self.comps:
            return "/"
        return "/" + "/".join(component_to_uri(c) for c in self.comps)

    __str__ = to_uri

    def __repr__(self) -> str:
        return f"Name({self.to_uri()!r})"

    def wire_size(self) -> int:
        return sum(len(c) for c in self.comps)


def _check(comps: tuple[bytes, ...]) -> None:
    if len(comps) > MAX_COMPONENTS:
        raise ValueError(f"name has {len(comps)} components, limit is {MAX_COMPONENTS}")
    total = 0
    for c in comps:
        n = len(c)
        if n == 0:
            raise ValueError("empty wire-form component")
        if n > MAX_COMPONENT_BYTES + 1:
            raise ValueError(f"component of {n - 1} bytes exceeds {MAX_COMPONENT_BYTES}")
        total += n
    if total > MAX_NAME_BYTES:
        raise ValueError(f"name of {total} bytes exceeds {MAX_NAME_BYTES}")


def valid_wire_comps(comps: object) -> TypeGuard[tuple[bytes, ...]]:
    """True if `comps` (untrusted, from the decoder) is a valid wire-form name.

    Hot path (every decoded packet): the checks run in C.  ``b"".join``
    raises TypeError unless every element is bytes-like, and the decoder
    only produces ``bytes`` for msgpack bin, so a join that succeeds means
    every component is ``bytes``."""
    if type(comps) is not tuple or len(comps) > MAX_COMPONENTS:
        return False
    if not comps:
        return True
    try:
        total = len(b"".join(comps))
    except TypeError:
        return False
    if total > MAX_COMPONENT_BYTES + 1:  # only then can one component be over-long
        if total > MAX_NAME_BYTES or max(map(len, comps)) > MAX_COMPONENT_BYTES + 1:
            return False
    return b"" not in comps


LOCALHOST = generic("localhost")
