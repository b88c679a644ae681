"""The device's baton: a lock handed to whoever asked first.

Several parties compute on one resident model in turn (a pool's job tenants, grpo_core.pool; training-API runs on a
shared base, grpo_core.training_api.shared), each holding the baton while it computes. ``threading.Lock`` is not
fair: a thread that releases it and asks again at once (a pool's rounds, turn after turn) usually wins it back
before a thread that has been waiting wakes, so a session's request could wait through many job steps. The baton
goes to waiters in the order they asked, so a request waits at most for the turns that asked before it.
"""

from __future__ import annotations

import threading
from collections import deque
from types import TracebackType


class Baton:
    """A FIFO lock (``acquire``, ``release``, a context manager), not reentrant."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[object] = deque()
        self._held = False

    def acquire(self) -> bool:
        with self._cond:
            me = object()
            self._queue.append(me)
            while self._held or self._queue[0] is not me:
                self._cond.wait()
            self._queue.popleft()
            self._held = True
        return True

    def release(self) -> None:
        with self._cond:
            if not self._held:
                raise RuntimeError("release of a baton nobody holds")
            self._held = False
            self._cond.notify_all()

    def locked(self) -> bool:
        return self._held

    def __enter__(self) -> Baton:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
