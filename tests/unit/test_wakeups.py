"""api.core.wakeups: a notify from another thread wakes the polls of its key at once, not at their next look; one
that came between a poll's look and its wait still wakes it; other keys sleep on."""

from __future__ import annotations

import asyncio
import threading
import time

from api.core.wakeups import Wakeups, wait


def test_a_notify_from_a_thread_wakes_the_watchers_of_its_key_only() -> None:
    wakeups = Wakeups()

    async def main() -> tuple[float, float]:
        with wakeups.watch("a") as a, wakeups.watch("b") as b:
            threading.Timer(0.05, wakeups.notify, args=("a",)).start()
            started = time.monotonic()
            await wait(a, 5.0)
            woke = time.monotonic() - started
            started = time.monotonic()
            await wait(b, 0.2)  # nobody notified b: it waits its whole pause
            return woke, time.monotonic() - started

    woke, slept = asyncio.run(main())
    assert woke < 1.0 and slept >= 0.19


def test_a_notify_before_the_wait_is_not_lost() -> None:
    wakeups = Wakeups()

    async def main() -> float:
        with wakeups.watch("k") as woken:
            wakeups.notify("k")  # between a poll's look and its wait
            await asyncio.sleep(0)  # the loop runs the wake-up it was handed
            started = time.monotonic()
            await wait(woken, 5.0)
            return time.monotonic() - started

    assert asyncio.run(main()) < 1.0
