"""The one error hierarchy, and the one signed error format.

`DecodeError` means a peer sent something malformed (remote fault); the
others are raised to applications by the client library.  Every exception a
user can see derives from `Error`.  Every message says what failed, where
and why.

An ERROR Data (content type 4) is how a producer says "I refused" or "it
failed" in a form a consumer can verify (unlike a Nack, which only says the
network could not deliver): its content is the msgpack map
``{[extra fields,] code, message}``.  `error_data` writes it (unsigned: the
producer signs it with whatever key it answers with) and `raise_for_error`
reads it; nothing else touches that body.  Codes are short words
(``unauthorized``, ``not-found``, ``bad-arguments``, ``mismatch``, an
exception's type name...) or an HTTP-like status in decimal (a refused node
operation, as management commands answer).
"""

from __future__ import annotations

from typing import Any, Iterable

import msgpack

from icnd.name import Name
from icnd.packet import ContentType, Data


class Error(Exception):
    """Base class of every error icnd raises on purpose."""


class DecodeError(Error):
    """Bytes from the network are not a valid icnd packet."""


class BoundsExceeded(DecodeError):
    """Well-formed, but holding more than a bound the receiver sets (more
    prefixes, adjacencies, ... than allowed): the sender sent too much, as
    opposed to something malformed.  Callers that count the two apart test
    the class, never the message."""


class Timeout(Error):
    """No answer before the deadline.  `missing`: who did not answer, where
    the operation knows (the members of a reduction round that never
    contributed, sorted); empty otherwise.  `ranks`: the same as ranks of a
    communicator (`icnd.collective`), where the call was a collective's."""

    def __init__(self, message: str = "", *, missing: Iterable[str] = (), ranks: Iterable[int] = ()) -> None:
        super().__init__(message)
        self.missing: tuple[str, ...] = tuple(missing)
        self.ranks: tuple[int, ...] = tuple(ranks)


class Nacked(Error):
    """The network refused the Interest.  `reason` is the Nack reason label
    (``no-route``, ``congestion``, ...), `detail` the refusing node's own
    words (may be empty), `name` what was asked for (None when not known),
    and `retries` how many times the consumer asked again, waiting for a
    route, before it gave up (`icnd.objects.fetch.RouteWait`)."""

    def __init__(self, reason: str, message: str = "", *, name: Name | None = None, detail: str = "",
                 retries: int = 0) -> None:
        self.reason = reason
        self.detail = detail
        self.name = name
        self.retries = retries
        super().__init__(message or f"nacked: {reason}")


class NotFound(Error):
    """The name exists nowhere the network could reach."""


class VerificationError(Error):
    """A signature or digest did not verify."""


class RemoteError(Error):
    """The remote side (a function, a producer) answered with an error."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class Unauthorized(Error):
    """The remote side refused this principal."""


class CommandError(RemoteError):
    """A node operation was refused: a management command (raised by the
    node's managers, carried in the command's reply, raised again by
    `Client.command`), an NDN face's management command, or an operation a
    node answers with an ERROR Data carrying a status (group install,
    member contribution).

    `status` is HTTP-like: 400 malformed, 403 forbidden, 404 unknown, 409
    conflict, 410 gone, 412 stale (a pushed reduction request named an old
    group version), 500 internal, 507 out of room; `code` is the same
    number as text (as for every `RemoteError`), `message` the reason
    alone."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(str(status), message)
        self.status = status


# --- the signed error format ------------------------------------------------------------------
def error_data(name: Name, code: str, message: str, *, freshness_ms: int = 0, **fields: Any) -> Data:
    """The (unsigned) ERROR Data answering `name`: ``{**fields, code,
    message}``.  `fields` are extras a reader of this particular error
    knows (the aggregator's ``layouts``); callers bound what they pass on
    from untrusted sources (the function host cuts a function's exception
    message)."""
    body = {**fields, "code": code, "message": message}
    return Data(name, msgpack.packb(body), ContentType.ERROR, freshness_ms)


def error_fields(data: Data) -> tuple[str, str]:
    """(code, message) of an ERROR Data; ``("error", <what it says>)`` for a
    malformed body."""
    try:
        body = msgpack.unpackb(data.content, raw=False)
        return str(body["code"]), str(body["message"])
    except Exception:
        return "error", f"{data.name}: malformed error {bytes(data.content[:200]).decode('utf-8', 'replace')!r}"


def error_exception(data: Data, what: Name | None = None) -> Error:
    """The exception an ERROR Data stands for: ``unauthorized`` →
    `Unauthorized` (its message says "unauthorized"), ``not-found`` →
    `NotFound`, a decimal status → `CommandError`, anything else →
    `RemoteError(code, message)`.  `what`: the name the message starts with
    (a function's, rather than its call's long trigger name), default the
    Data's; a producer's message that starts with that name already does
    not repeat it."""
    code, message = error_fields(data)
    if code in ("unauthorized", "not-found"):
        what = data.name if what is None else what
        for said in (f"{data.name}: ", f"{what}: "):
            message = message.removeprefix(said)
        if code == "unauthorized":
            return Unauthorized(f"{what}: unauthorized: {message}")
        return NotFound(f"{what}: {message}")
    if code.isdecimal() and code.isascii():
        return CommandError(int(code), message)
    return RemoteError(code, message)


def raise_for_error(data: Data) -> None:
    """Raise what `data` stands for if it is an ERROR Data; else nothing."""
    if data.content_type == ContentType.ERROR:
        raise error_exception(data)
