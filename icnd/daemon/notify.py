"""Readiness for service managers: systemd's notify protocol (``Type=notify``).

systemd passes ``$NOTIFY_SOCKET``: the path of an ``AF_UNIX`` datagram
socket, in the abstract namespace when it starts with ``@``.  A message is
one datagram of newline-separated ``KEY=VALUE`` assignments (``READY=1``,
``STATUS=...``, ``RELOADING=1``, ``STOPPING=1``); the protocol is documented
in sd_notify(3) and has no replies, no framing and no versions.  That is
why it is written here (a socket, one ``sendto``) rather than taken from a
package: the ``sdnotify`` library is these same lines (last released in
2017).

Invariants: notifying never blocks the node (the socket is non-blocking:
a full queue drops the message, as sd_notify does) and never fails it (an
unreachable socket is logged once and ignored: the daemon must run the same
with or without a service manager).  `Notifier.from_environ` removes
``NOTIFY_SOCKET`` from the environment, as ``sd_notify(unset_environment=1)``
does, so processes the node starts (function workers) never speak for it.
"""

from __future__ import annotations

import logging
import os
import socket
import time

log = logging.getLogger("icnd.notify")

ENV = "NOTIFY_SOCKET"


class Notifier:
    """Sends state changes to the service manager at `address`; a no-op when there is none."""

    def __init__(self, address: str | None) -> None:
        if address and address.startswith("@"):
            address = "\0" + address[1:]  # the abstract namespace
        self.address = address or None
        self._failed = False

    @classmethod
    def from_environ(cls) -> Notifier:
        """The notifier ``$NOTIFY_SOCKET`` asks for (and the variable removed from the environment)."""
        return cls(os.environ.pop(ENV, None))

    def notify(self, *assignments: str) -> bool:
        """Send one datagram of ``KEY=VALUE`` lines; whether it was sent."""
        if self.address is None:
            return False
        message = "\n".join(assignments).encode("utf-8", "replace")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.setblocking(False)
                sock.sendto(message, self.address)
        except OSError as exc:
            if not self._failed:
                self._failed = True
                log.warning("cannot notify the service manager at %s=%s (logged once): %s",
                            ENV, self.address.replace("\0", "@"), exc.strerror or exc)
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.notify("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def reloading(self) -> bool:
        """A reload starts; ``MONOTONIC_USEC`` lets systemd tell this reload from an earlier one."""
        return self.notify("RELOADING=1", "STATUS=reloading the configuration",
                           f"MONOTONIC_USEC={time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000}")

    def stopping(self) -> bool:
        return self.notify("STOPPING=1", "STATUS=shutting down")
