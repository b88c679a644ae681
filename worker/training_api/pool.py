"""A worker's pool of training-API sessions: several sessions served at once, their training runs sharing the base
models resident on this worker (grpo_core.training_api.shared).

A session spends most of its life waiting for its client (computing rewards, building the next batch), so one
session per worker leaves the device idle. A pool of up to ``POOL_TENANTS`` sessions (worker.slots.pool_slots: 4 on
a GPU, 1 on a CPU) fixes that: the first session comes from its doorbell; while the pool has room, it asks the API
for more (api.training_api.leases.claim_next: the session waiting longest whose first request needs a base model
already resident here), at most every ``FILL_EVERY`` seconds (worker.slots').

Each session is served as alone (worker.training_api.session.SessionRunner, in a thread of its own): its lease and
renewals, its requests in order, its failures (a request fails alone; a session that fails or is lost ends alone).
What they share is the ``Seat``: the resident bases, and the device, which runs one request at a time, whoever's
is pending when it frees (no fixed cycle). A run's results do not depend on who shares the worker (a run holds the
shared slot with exactly its own values: bit for bit as alone), beyond rounding where calls of several runs share a
decode (sample calls) or passes (forward_backward calls, with POOL_SAMPLE_TOGETHER: worker.slots.works_together).
Each session is billed the seconds its requests held the device (the claim says ``shared``), not the wall clock the
sessions share.

The pool ends when its last session ends; a pool of one slot is a session served as it always was.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from runtime import training_api as tc
from worker.client import InternalClient, worker_id
from worker.settings import WorkerSettings
from worker.slots import FILL_EVERY, pool_slots, works_together
from worker.training_api.jobs import JobsOnRuns
from worker.training_api.session import Seat, SessionRunner

log = logging.getLogger(__name__)


class Sessions:
    """The sessions one worker process serves in one ``seat``, each in a thread of its own (SessionRunner), and the
    asks for more (``claim_more``). A pool of sessions (``SessionPool``) and a pool of jobs that lends its resident
    to sessions (worker.pool) both keep their sessions here."""

    def __init__(self, settings: WorkerSettings, seat: Seat) -> None:
        self.settings, self.seat = settings, seat
        self.runners: dict[str, tuple[SessionRunner, threading.Thread]] = {}

    def __len__(self) -> int:
        """Sessions still served (those that ended leave)."""
        for sid, (_, thread) in list(self.runners.items()):
            if not thread.is_alive():
                del self.runners[sid]
        return len(self.runners)

    def start(self, runner: SessionRunner, claim: tc.SessionClaim) -> None:
        thread = threading.Thread(target=runner.serve, args=(claim,), name=f"session-{claim.session_id}", daemon=True)
        self.runners[claim.session_id] = (runner, thread)
        thread.start()

    def claim_more(self, client: InternalClient, bases: list[str], shape: tc.RunShape | None = None) -> bool:
        """Claim one more session whose first request needs one of ``bases`` (and creates a run of ``shape``, when
        given) and start serving it; whether one came."""
        from worker import runner

        if not bases or runner.shutting_down():
            return False
        claim_id = uuid.uuid4().hex
        ask = tc.ClaimNext(worker_id=worker_id(), claim_id=claim_id, bases=bases, shape=shape)
        try:
            claim = client.training_claim_next(ask)
        except Exception:  # the pool's ask: the API unreachable; the sessions here go on, the next ask retries
            log.exception("could not ask for another session")
            return False
        if claim is None:
            return False
        log.info("session %s joins this worker's %d session(s)", claim.session_id, len(self.runners))
        self.start(SessionRunner(claim.session_id, self.settings, claim_id=claim_id, seat=self.seat), claim)
        return True

    def stop(self) -> None:
        """Stop serving every session (each hands its session back) and wait for them."""
        for runner, thread in self.runners.values():
            runner.stopped.set()
            thread.join()
        self.runners.clear()


class SessionPool:
    """One worker process's sessions from a doorbell: ``session_id`` first, then more that fit, while it has room."""

    def __init__(self, session_id: str, settings: WorkerSettings) -> None:
        self.session_id, self.settings = session_id, settings
        self.slots = pool_slots(settings)
        self.seat = Seat(pooled=self.slots > 1, together=self.slots > 1 and works_together(settings))
        self.sessions = Sessions(settings, self.seat)
        self.jobs = JobsOnRuns(settings, self.seat, f"sessions:{session_id}")  # jobs on the runs' resident base
        self._next_fill = 0.0  # monotonic time of the next ask for more tenants

    def run(self) -> None:
        first = SessionRunner(self.session_id, self.settings, seat=self.seat)
        if self.slots == 1:
            first.run()
            return
        claim = first.claim()
        if claim is None:
            return
        self.sessions.start(first, claim)
        client = InternalClient(self.settings.api_url, self.settings.internal_token)
        failed: Exception | None = None
        try:
            while len(self.sessions) or self.jobs.tenants:
                self._fill(client)
                if self.jobs.tenants:
                    self.jobs.round()
                else:
                    time.sleep(FILL_EVERY)
        except Exception as exc:  # the pool's loop failed: its jobs end with it (no lease is left beating)
            failed = exc
            raise
        finally:
            client.close()
            self.sessions.stop()
            self.jobs.close(failed)
            from worker.job import model_cache

            model_cache(self.settings).release_all()

    def _room(self) -> bool:
        return len(self.sessions) + self.jobs.tenants < self.slots

    def _fill(self, client: InternalClient) -> None:
        """While there is room, at most every ``FILL_EVERY`` seconds: one more session whose first request needs a
        base model resident here (none until a run of the sessions here has loaded one), then jobs of a base the
        runs loaded, trained on it (``JobsOnRuns``)."""
        from worker import runner

        if not self._room() or time.monotonic() < self._next_fill:
            return
        self._next_fill = time.monotonic() + FILL_EVERY
        models = {path: model for r, _ in self.sessions.runners.values() for model, path in r.resident.bases.items()}
        self.sessions.claim_more(client, sorted(set(models.values())))
        if self._room() and not runner.shutting_down():
            self.jobs.fill(models, self._room)
