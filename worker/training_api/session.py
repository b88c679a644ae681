"""A training-API session on this worker, as glue: claim it, take its requests in order from the API, answer each
(worker.training_api.resident: the session's models, resident between calls), post the typed result, and hand the
session back when its client closes it or it has been idle too long.

A session's unsaved state lives only on its worker: when this process dies the reaper marks the session lost and
fails its open requests (api.training_api.leases.reap), and the client restores from its last ``save_state``.

A lease like a job's: a thread renews it every third of ``lease_seconds`` while a request runs (a long
forward/backward is not a lost worker), and a refused renewal (the session was taken from us) stops the loop.

A runner sits in a ``Seat``: what it shares with the other sessions a worker serves at once
(worker.training_api.pool): the resident base models, and the device, which runs one request at a time. A runner
alone has a seat of its own.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from grpo_core.errors import UserError
from runtime import training_api as tc
from runtime.storage import make_store
from worker.client import InternalClient, StaleLease, worker_id
from worker.settings import WorkerSettings
from worker.training_api.resident import Resident

if TYPE_CHECKING:
    from grpo_core.hardware.baton import Baton
    from grpo_core.training_api.shared import SharedBases

log = logging.getLogger(__name__)
NEXT_WAIT_SECONDS = 10.0  # how long one ask for the next request may be held open by the API


def _baton() -> Baton:
    from grpo_core.hardware.baton import Baton

    return Baton()


def _shared_bases() -> SharedBases:
    from grpo_core.training_api.shared import SharedBases

    return SharedBases()


class SessionRunner:
    """One claim of one session: its lease, its request loop, its models (``resident``)."""

    def __init__(
        self,
        session_id: str,
        settings: WorkerSettings,
        *,
        claim_id: str | None = None,
        seat: Seat | None = None,
    ) -> None:
        self.session_id = session_id
        self.settings = settings
        self.client = InternalClient(settings.api_url, settings.internal_token)
        self.store = make_store(settings)
        self.worker_id = worker_id()
        self.claim_id = claim_id or uuid.uuid4().hex
        self.work = settings.scratch_dir / "training" / session_id / self.claim_id[:8]
        self.seat = seat or Seat()
        self.resident = Resident(settings, self.store, self.work, self.seat.shared)
        self.stopped = threading.Event()

    def run(self) -> None:
        """Claim the session and serve it."""
        claim = self.claim()
        if claim is not None:
            self.serve(claim)

    def claim(self) -> tc.SessionClaim | None:
        """The session claimed by this runner, or None when another holds it (or it ended)."""
        try:
            body = tc.Claim(worker_id=self.worker_id, claim_id=self.claim_id, shared=self.seat.pooled)
            return self.client.training_claim(self.session_id, body)
        except StaleLease as exc:
            log.info("session %s not claimed: %s", self.session_id, exc)
            self.client.close()
            return None

    def serve(self, claim: tc.SessionClaim) -> None:
        """Serve the claimed session until it ends, then hand it back and free what it held."""
        self.work.mkdir(parents=True, exist_ok=True)
        renew = threading.Thread(target=self._renew, args=(claim.lease_seconds,), daemon=True)
        renew.start()
        reason, message = "error", None
        try:
            reason = self._serve(claim.idle_timeout_seconds)
        except StaleLease as exc:  # the reaper found our lease expired and the session lost: nothing more to write
            log.info("session %s stopped: %s", self.session_id, exc)
            reason = ""
        except Exception as exc:  # the session's boundary: whatever stopped the loop, the session is handed back
            log.exception("session %s failed", self.session_id)
            message = f"{type(exc).__name__}: {exc}"
        finally:
            self.stopped.set()
            with self.seat.device:
                self.resident.free(release_cache=not self.seat.pooled)
            if reason:
                try:
                    self.client.training_release(
                        self.session_id, tc.Release(claim_id=self.claim_id, reason=reason, message=message)
                    )
                except Exception:  # the reaper marks it lost when its lease expires
                    log.exception("session %s: could not hand it back", self.session_id)
            self.client.close()

    def _serve(self, idle_timeout: int) -> str:
        """Serve requests until the client closes the session ("finished") or none comes for ``idle_timeout``
        seconds ("idle")."""
        idle_since = time.monotonic()
        while not self.stopped.is_set():
            left = idle_timeout - (time.monotonic() - idle_since)
            if left <= 0:
                log.info("session %s idle for %d s: handing it back", self.session_id, idle_timeout)
                return "idle"
            ask = tc.NextRequest(
                claim_id=self.claim_id,
                wait_seconds=min(NEXT_WAIT_SECONDS, max(left, 0.1)),
                max_batch=self.settings.training_sample_batch,
            )
            answer = self.client.training_next(self.session_id, ask)
            if answer.stop is not None:
                return "finished"
            if answer.request is None:
                continue
            items = [answer.request, *answer.more]
            posts = self.execute_samples(items) if answer.more else [self.execute(answer.request)]
            for item, post in zip(items, posts, strict=True):
                if self.client.training_result(self.session_id, item.id, post).stop is not None:
                    return "finished"  # a close failed the rest of the open requests
            idle_since = time.monotonic()
        return "finished"

    def _renew(self, lease_seconds: int) -> None:
        while not self.stopped.wait(max(lease_seconds / 3, 1)):
            try:
                if self.client.training_heartbeat(self.session_id, tc.Fenced(claim_id=self.claim_id)).stop:
                    return  # finished: the main loop learns it at its next call
            except StaleLease:
                self.stopped.set()
                return
            except Exception:  # the renewal thread's boundary: a missed beat is retried, the lease outlives several
                log.exception("session %s: lease renewal failed (retrying)", self.session_id)

    def execute(self, item: tc.WorkItem) -> tc.ResultPost:
        """Run one request; a user's mistake the API could not see (a token beyond the vocabulary) fails it as
        ``user``, anything else as ``server``; the session goes on either way."""
        if self.seat.together and isinstance(item.request, tc.ForwardBackward):
            out, share = self.seat.forward_backward(self.resident, item.target or "", item.request)
            log.info("session %s: forward_backward in %.2f s of passes shared", self.session_id, share)
            return self._post(item, out, share)
        with self.seat.device:
            started = time.perf_counter()
            try:
                result: tc.Result | Exception = self.resident.answer(item.request, item.target or "")
            except Exception as exc:  # the request's boundary: it fails alone (_post says how), the session goes on
                result = exc
            held = time.perf_counter() - started
        log.info("session %s: %s in %.2f s", self.session_id, item.request.kind, held)
        return self._post(item, result, held)

    def execute_samples(self, items: list[tc.WorkItem]) -> list[tc.ResultPost]:
        """Sample requests that were queued together, decoded together where they can be (Resident.sample_many);
        each fails alone."""
        samples = [item.request for item in items if isinstance(item.request, tc.Sample)]
        assert len(samples) == len(items), "the API batches sample requests only"
        results, held = self.seat.sample(self.resident, samples)
        log.info("session %s: %d samples in %.2f s of a decode", self.session_id, len(items), held)
        share = held / len(items)  # the decode they shared, billed evenly
        return [self._post(item, result, share) for item, result in zip(items, results, strict=True)]

    def _post(self, item: tc.WorkItem, result: tc.Result | Exception, held: float = 0.0) -> tc.ResultPost:
        """The request's result or error, with the seconds it held the device (what a pooled session is billed)."""
        from grpo_core.training_api.spec import BatchError

        if isinstance(result, UserError | BatchError):
            error = tc.RequestError(message=str(result), category="user")
            return tc.ResultPost(claim_id=self.claim_id, error=error, device_seconds=held)
        if isinstance(result, Exception):
            log.error("session %s: %s %s failed", self.session_id, item.request.kind, item.id, exc_info=result)
            error = tc.RequestError(
                message=f"{item.request.kind} failed on the worker: {type(result).__name__}: {result}"
            )
            return tc.ResultPost(claim_id=self.claim_id, error=error, device_seconds=held)
        return tc.ResultPost(claim_id=self.claim_id, result=result, device_seconds=held)


@dataclass
class Seat:
    """What a session's runner shares with the other sessions on this worker: the base models resident for their
    training runs, and the device, which runs one request at a time (a lock: whatever is pending runs as soon as
    it is free). A runner alone has a seat of its own; ``pooled``: the worker serves several sessions at once
    (worker.training_api.pool), so each is billed the seconds its requests held the device, not its lease.
    ``together``: the sessions' forward_backward calls pending at once share passes (POOL_SAMPLE_TOGETHER)."""

    shared: SharedBases = field(default_factory=_shared_bases)
    device: Baton = field(default_factory=_baton)  # FIFO: a request waits only for what asked before it
    pooled: bool = False
    together: bool = False
    _waiting: list[_Queued] = field(default_factory=list)  # work queued for the device
    _queue: threading.Lock = field(default_factory=threading.Lock)

    def sample(self, resident: Resident, requests: list[tc.Sample]) -> tuple[list[tc.SampleResult | Exception], float]:
        """``requests``' results and the seconds of the device billed to them: whoever holds the device next
        decodes every session's sample work queued by then, together where it can
        (worker.training_api.resident.sample_jointly: calls of several runs on one shared base in one decode), and
        splits the decode's seconds among the sessions by their requests. No cycle: the work queued while the
        device was busy runs as soon as it frees."""
        from worker.training_api.resident import sample_jointly

        def decode(batch: list[_Queued]) -> list[tuple[Any, float | None]]:
            try:
                return [(out, None) for out in sample_jointly([(w.resident, w.payload) for w in batch])]
            except Exception as exc:  # the decode's boundary: these requests fail, the sessions go on
                return [([exc] * len(w.payload), None) for w in batch]

        work = self._run(_Queued("sample", resident, requests, float(len(requests))), decode)
        return work.result, work.held

    def forward_backward(
        self, resident: Resident, target: str, request: tc.ForwardBackward
    ) -> tuple[tc.ForwardBackwardResult | Exception, float]:
        """``request``'s result (or what failed it) and the seconds billed to it: whoever holds the device next runs
        every session's forward_backward queued by then, in passes shared by runs that can share them
        (worker.training_api.resident.forward_backward_jointly); a call is billed its own seconds, or its tokens'
        share of the passes it shared."""
        from worker.training_api.resident import forward_backward_jointly

        def compute(batch: list[_Queued]) -> list[tuple[Any, float | None]]:
            try:
                return list(forward_backward_jointly([(w.resident, *w.payload) for w in batch]))
            except Exception as exc:  # the passes' boundary: these requests fail, the sessions go on
                return [(exc, None)] * len(batch)

        tokens = float(sum(len(d.tokens) for d in request.data))
        work = self._run(_Queued("forward_backward", resident, (target, request), max(tokens, 1.0)), compute)
        return work.result, work.held

    def _run(self, work: _Queued, compute: Callable[[list[_Queued]], list[tuple[Any, float | None]]]) -> _Queued:
        """``work`` done: by this thread, with every work of its kind queued by the time it holds the device
        (``compute``: one result per work and the seconds it caused, None: its weight's share of the batch's;
        never raising), or by another thread that took it along."""
        with self._queue:
            self._waiting.append(work)
        with self.device:
            if not work.done:  # nobody took it meanwhile: this thread runs everything of its kind queued
                with self._queue:
                    batch = [w for w in self._waiting if w.kind == work.kind]
                    self._waiting = [w for w in self._waiting if w.kind != work.kind]
                started = time.perf_counter()
                outs = compute(batch)
                held = time.perf_counter() - started
                total = sum(w.weight for w in batch)
                for w, (out, seconds) in zip(batch, outs, strict=True):
                    w.result, w.done = out, True
                    w.held = held * w.weight / total if seconds is None else seconds
        return work


@dataclass(eq=False)
class _Queued:
    """One session's work waiting for the device (``kind``: what it can share a batch with; ``weight``: its part of
    the batch's seconds), and once done, its result and its seconds."""

    kind: str
    resident: Resident
    payload: Any
    weight: float
    result: Any = None
    held: float = 0.0
    done: bool = False
