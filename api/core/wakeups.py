"""In-process wake-ups for the training API's long polls, so a result reaches its client (and a request its worker)
when it is committed, not at the poll's next look.

Two long polls wait on the database: a client's ``retrieve_future`` for its request, and a worker's ``next`` for its
session's next request. Each looks again every 50 ms, backing off to 0.5 s while nothing changes. A route of this
process that commits such a change calls ``notify`` afterwards (from any thread), and the polls of this process
that wait for that key look at once. A poll registers before it looks, so a change committed between its look and
its wait still wakes it.

Only this process's polls wake: behind a load balancer with several API processes, a poll served by another one
sees the change at its own next look. One ``Wakeups`` per process: the job queue's (api.core.queue), which the
services that enqueue already hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass


def request_key(request_id: str) -> str:
    return f"request:{request_id}"


def session_key(session_id: str) -> str:
    return f"session:{session_id}"


@dataclass(frozen=True)
class _Waiter:
    loop: asyncio.AbstractEventLoop
    woken: asyncio.Event


class Wakeups:
    def __init__(self) -> None:
        self._waiters: dict[str, set[_Waiter]] = defaultdict(set)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def watch(self, key: str) -> Iterator[asyncio.Event]:
        """An event set by ``notify(key)`` for as long as the ``with`` lasts (on the running loop)."""
        waiter = _Waiter(asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiters[key].add(waiter)
        try:
            yield waiter.woken
        finally:
            with self._lock:
                self._waiters[key].discard(waiter)
                if not self._waiters[key]:
                    del self._waiters[key]

    def notify(self, key: str) -> None:
        """Wake every poll of this process watching ``key``; callable from any thread, after the commit."""
        with self._lock:
            waiters = list(self._waiters.get(key, ()))
        for w in waiters:
            w.loop.call_soon_threadsafe(w.woken.set)


async def wait(woken: asyncio.Event, seconds: float) -> None:
    """Until ``woken`` is set or ``seconds`` pass; clears it for the next wait."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(woken.wait(), seconds)
    woken.clear()
