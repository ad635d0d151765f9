"""The results a function host handed out thunks for, from the call to their retention's end.

A call whose result is not ready within the host's inline budget (or is too
large to come back in the trigger's Data) gets a thunk: a name under
``/node/<host>/thunk/<id>`` the caller polls.  `ThunkResults` keeps each such
`Job` by its id (`ThunkResults.hand_out`), stores a finished result as an
object under that name (a few at a time: the node's object store takes a
bounded number of uploads at once), keeps it `retention` seconds after it
finished (one task for all jobs, `ThunkResults.expire`: retention is the same
for every job, so they expire in the order they finished), then forgets it,
removing the stored object, and remembers its id (a bounded number of
tombstones) so that a late poll is answered "gone" rather than "unknown".
"""

from __future__ import annotations

import secrets
from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field

import trio

from icnd.endpoint import Endpoint
from icnd.errors import Error
from icnd.name import Name, generic
from icnd.objects.fetch import publish_object

PUBLISH_SLOTS = 4  # results being stored as objects at once (the node's store takes 8 uploads)


@dataclass
class Job:
    started: float
    thunk_id: str = ""  # given when the caller gets a thunk (then the job is in `ThunkResults`)
    done: trio.Event = field(default_factory=trio.Event)
    result: bytes | None = None
    error: tuple[str, str] | None = None
    thunked: bool = False  # the caller got a thunk: the result must be stored as an object
    published: bool = False
    stored: trio.Event = field(default_factory=trio.Event)  # stored as an object, or failed: polls may be answered


class ThunkResults:
    """The jobs whose callers hold a thunk under `prefix`, kept `retention`
    seconds after they finish (module docstring); stored through `ep`."""

    def __init__(self, ep: Endpoint, prefix: Name, *, retention: float, max_tombstones: int) -> None:
        self.ep = ep
        self.prefix = prefix
        self.retention = retention
        self.max_tombstones = max_tombstones
        self._jobs: dict[str, Job] = {}
        self._gone: OrderedDict[str, None] = OrderedDict()
        # finished jobs in the order they finished, each kept until `retention` after
        self._retained: deque[tuple[float, Job]] = deque()
        self._retained_added = trio.Event()
        # large results stored as objects a few at a time: the node's object store takes a
        # bounded number of uploads at once (issue #15, D6: more were refused, their calls lost)
        self._publish_slots = trio.Semaphore(PUBLISH_SLOTS)

    def __len__(self) -> int:
        return len(self._jobs)

    def __iter__(self) -> Iterator[str]:
        """The ids of the jobs kept."""
        return iter(self._jobs)

    @property
    def retained(self) -> int:
        """Finished jobs waiting for their retention to end."""
        return len(self._retained)

    def name_of(self, job: Job) -> Name:
        """The name the job's caller polls (and its stored result's)."""
        return self.prefix.append_wire(generic(job.thunk_id))

    def hand_out(self, job: Job) -> None:
        """The caller of `job` gets a thunk: give the job its id and keep it."""
        job.thunked = True
        job.thunk_id = secrets.token_hex(16)
        self._jobs[job.thunk_id] = job

    def get(self, thunk_id: str) -> Job | None:
        return self._jobs.get(thunk_id)

    def is_gone(self, thunk_id: str) -> bool:
        """`thunk_id` named a job whose retention ended (among the tombstones kept)."""
        return thunk_id in self._gone

    async def publish_and_retain(self, job: Job) -> None:
        await self._publish(job)
        self.retain(job)

    def retain(self, job: Job) -> None:
        """`job` finished: keep it `retention` seconds from now."""
        self._retained.append((trio.current_time() + self.retention, job))
        self._retained_added.set()

    async def _publish(self, job: Job) -> None:
        try:
            async with self._publish_slots:
                await publish_object(self.ep, self.name_of(job), job.result or b"", freshness=self.retention,
                                     kind="value")
            job.published = True
        except Error as exc:
            job.error = ("result-unavailable", f"the result could not be stored: {exc}")
        finally:
            job.stored.set()
            # stored (or failed): the node holds it now; the host keeps only the job's state, so
            # retained jobs cost bytes only in the node's bounded object store (issue #15, D6)
            job.result = None

    async def expire(self) -> None:
        """Forget each finished job `retention` after it finished (the host runs this task)."""
        retained = self._retained
        while True:
            if not retained:
                self._retained_added = trio.Event()
                await self._retained_added.wait()
                continue
            await trio.sleep_until(retained[0][0])
            while retained and retained[0][0] <= trio.current_time():
                await self._forget(retained.popleft()[1])

    async def _forget(self, job: Job) -> None:
        self._jobs.pop(job.thunk_id, None)
        self._gone[job.thunk_id] = None
        while len(self._gone) > self.max_tombstones:
            self._gone.popitem(last=False)
        if job.published:
            try:
                await self.ep.command("object", "remove", name=self.name_of(job).to_uri())
            except Error:
                pass
