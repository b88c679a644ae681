"""grpo_core.hardware.baton.Baton: the lock goes to waiters in the order they asked, so a thread that releases and
asks again at once (a pool's rounds, turn after turn) queues behind those already waiting."""

from __future__ import annotations

import threading
import time

import pytest

from grpo_core.hardware.baton import Baton


def test_the_baton_goes_to_whoever_asked_first() -> None:
    baton, order = Baton(), []
    baton.acquire()

    def wait_for_it(name: str) -> None:
        with baton:
            order.append(name)

    threads = []
    for name in ("first", "second", "third"):
        threads.append(threading.Thread(target=wait_for_it, args=(name,)))
        threads[-1].start()
        while len(baton._queue) < len(threads):  # queued in this order
            time.sleep(0.001)
    baton.release()
    baton.acquire()  # the releaser asks again at once: it queues behind the three
    order.append("releaser")
    baton.release()
    for t in threads:
        t.join(timeout=10)
    assert order == ["first", "second", "third", "releaser"]
    assert not baton.locked()
    with pytest.raises(RuntimeError):
        baton.release()
