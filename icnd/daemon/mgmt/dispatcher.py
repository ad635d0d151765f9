"""The management dispatcher: from a command Interest to its manager's handler and back.

See `icnd.daemon.mgmt` for the protocol.  The node's receive path calls
`Dispatcher.receive` for a ``/localhost/icnd`` Interest from a local face
(`scopes`); the command runs as its own task (a command may wait, e.g. for a
connection), and the reply, signed with DigestSha256, goes straight back on
the face's transport (not through a link emulator the face may have).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import msgpack

from icnd.errors import CommandError
from icnd.faces import Face, LinkService
from icnd.name import LOCALHOST, generic
from icnd.packet import Data, Interest
from icnd.security import DigestKey

log = logging.getLogger("icnd.mgmt")

MGMT_PREFIX = (LOCALHOST, generic("icnd"))

# ``handler(requesting face, arguments)``, or ``(face, arguments, descriptor)`` for one marked `takes_fd`
Handler = Callable[..., Awaitable[Any]]
_H = TypeVar("_H", bound=Callable[..., Awaitable[Any]])


def takes_fd(handler: _H) -> _H:
    """Mark a handler ``(face, args, passed)`` whose command comes with one
    descriptor (SCM_RIGHTS): the dispatcher takes it from the face as the
    command arrives and hands it over as a `PassedFd`."""
    handler.takes_fd = True  # type: ignore[attr-defined]  # a mark on a function object, read with getattr
    return handler


class PassedFd:
    """The descriptor that came with a command (or None): a handler that
    uses it `take`s it and owns it from then on; the dispatcher closes it
    otherwise, whatever the handler did (returned or raised)."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int | None) -> None:
        self._fd = fd

    def take(self) -> int | None:
        fd, self._fd = self._fd, None
        return fd

    def close(self) -> None:
        fd = self.take()
        if fd is not None:
            os.close(fd)


class WithFds:
    """A handler's result to be sent with descriptors (SCM_RIGHTS) alongside
    the reply, e.g. a sealed shared-memory segment (`icnd.faces.shm`).  The
    dispatcher closes `fds` once sent (the client has its own copies)."""

    def __init__(self, result: Any, fds: list[int]) -> None:
        self.result, self.fds = result, fds
Commands = dict[tuple[str, str], Handler]


class Manager(Protocol):
    def commands(self) -> Commands:
        """``(module, verb) -> handler(requesting face, arguments) -> result``."""
        ...


class Dispatcher:
    """Answers icnd management commands; `spawn(fn, *args)` starts a task."""

    def __init__(self, spawn: Callable[..., None]) -> None:
        self.handlers: Commands = {}
        self._spawn = spawn
        self._digest = DigestKey()

    def add(self, manager: Manager) -> None:
        for verb, handler in manager.commands().items():
            if verb in self.handlers:
                raise ValueError(f"two managers answer {'/'.join(verb)}")
            self.handlers[verb] = handler

    def scopes(self, face: Face) -> tuple[tuple[bytes, ...], ...]:
        """The name prefixes (first two components) this dispatcher answers on `face`."""
        return (MGMT_PREFIX,) if face.local else ()

    def receive(self, face: Face, link: LinkService, interest: Interest) -> bool:
        """Take a command Interest (always: every name under the prefix is a
        command).  A command that takes a descriptor (`takes_fd`) gets it
        here, in arrival order, before its task starts (tasks start in any
        order), so descriptors and commands never cross."""
        verb = tuple(c[1:].decode("utf-8", "replace") for c in interest.name.comps[2:4])
        handler = self.handlers.get((verb[0], verb[1])) if len(verb) == 2 else None
        take = getattr(face, "take_fd", None)
        fd = take() if getattr(handler, "takes_fd", False) and take is not None else None
        self._spawn(self.handle, face, link, interest, PassedFd(fd))
        return True

    async def handle(self, face: Face, link: LinkService, interest: Interest,
                     passed: PassedFd | None = None) -> None:
        """Run the command; a descriptor that came with it and that the
        handler did not take is closed here, however the command ended."""
        verb = tuple(c[1:].decode("utf-8", "replace") for c in interest.name.comps[2:4])
        what = "/".join(verb)
        try:
            handler = self.handlers.get((verb[0], verb[1])) if len(verb) == 2 else None
            if handler is None:
                raise CommandError(404, f"unknown command {what!r}")
            args: Any = {}
            if interest.app_params:
                try:
                    args = msgpack.unpackb(interest.app_params, raw=False, strict_map_key=False)
                except Exception:
                    raise CommandError(400, "command parameters are not a msgpack map") from None
            if not isinstance(args, dict):
                raise CommandError(400, "command parameters are not a msgpack map")
            if getattr(handler, "takes_fd", False):
                result = await handler(face, args, passed or PassedFd(None))
            else:
                result = await handler(face, args)
            if isinstance(result, WithFds):
                await self._reply_with_fds(face, link, interest, result)
                return
            reply: dict[str, Any] = {"ok": True, "result": result}
        except CommandError as exc:
            reply = {"ok": False, "code": exc.status, "error": exc.message}
        except Exception as exc:  # a bug must not kill the node; the caller learns of it
            log.exception("management command %s failed", what)
            reply = {"ok": False, "code": 500, "error": f"internal error: {exc.__class__.__name__}: {exc}"}
        finally:
            if passed is not None:
                passed.close()
        data = self._digest.sign(Data(interest.name, msgpack.packb(reply, use_bin_type=True)))
        face.send(link.encode(data))

    async def _reply_with_fds(self, face: Face, link: LinkService, interest: Interest, result: WithFds) -> None:
        data = self._digest.sign(Data(interest.name, msgpack.packb({"ok": True, "result": result.result},
                                                                  use_bin_type=True)))
        try:
            send = getattr(face, "send_with_fds", None)
            if send is None or not getattr(face, "can_pass_fds", False):
                failed = {"ok": False, "code": 400, "error": "this connection cannot pass descriptors"}
                face.send(link.encode(self._digest.sign(Data(interest.name, msgpack.packb(failed)))))
                return
            try:
                send(link.encode(data), result.fds)
            except Exception as exc:  # the client went away meanwhile: nothing to answer
                log.info("reply with descriptors to %s not sent: %s", face, exc)
        finally:
            for fd in result.fds:
                os.close(fd)
