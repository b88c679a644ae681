"""Routing a model's requests across the replicas that serve its base model (one ``Router`` per API process,
``app.state.inference``).

Replicas. The operator's (INFERENCE_BASE_URL, INFERENCE_ENDPOINTS, and those registered at run time) and the ones
workers started on demand (api.inference.replicas), read from the database every few seconds. An endpoint written
``dns+http://name:port/v1`` is every address ``name`` resolves to (a Kubernetes headless Service in front of an
autoscaled Deployment: each ready pod a replica). Each replica has its own ``InferenceClient``
(api.inference.service: the HTTP client and the adapters this process loaded into it).

Affinity. A fine-tuned model's requests go to the replica that ranks first for its adapter by rendezvous hashing
(the highest hash of adapter and replica): every API process computes the same order from the same list, with no
shared state, so an adapter is loaded into one replica rather than into whichever a request lands on; when a replica
leaves, only its adapters move (each to its next in order), and a replica that joins takes about its share. A base
model's requests rank replicas by the project's cache salt instead, so a project's prompts meet its own prefix
cache. A replica with INFERENCE_REPLICA_CONCURRENCY requests of this process in flight is passed over for the next in
order (spreading a hot adapter), unless every replica is that busy.

Health. Every INFERENCE_HEALTH_SECONDS each replica's ``/models`` is asked (2 s): one that fails, or that serves
another base model than it was registered for, is skipped until it answers again. A request that finds its replica
down (it cannot be reached, or it went away mid-request) is sent to the next replica in order, so a replica that
stops costs no request while another serves the model. Only the caller's own faults and the last replica's
failure reach the caller.

Cold start. A model with no replica, on a service that starts them on demand (INFERENCE_ON_DEMAND), asks a worker
for one (api.inference.replicas.request) and waits up to INFERENCE_START_WAIT_SECONDS for it to be ready; past that
the answer is 503 ``model_starting`` with ``Retry-After`` (the start goes on; OpenAI's SDK retries), never a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlparse

from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse
from sqlalchemy.orm import Session
from starlette.background import BackgroundTask, BackgroundTasks

from api.core.errors import NotFound, Unavailable
from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.db.models import InferenceReplica, ReplicaState
from api.inference import replicas
from api.inference.service import InferenceClient, Meter
from api.models.schemas import Serving
from api.models.served import Target
from runtime.storage import ObjectStore

log = logging.getLogger(__name__)
REFRESH_SECONDS = 2.0  # how stale this process's list of replicas may be
HEALTH_TIMEOUT = 2.0
STARTING_RETRY_AFTER = 5  # seconds: a client retrying sooner finds its replica ready sooner (it loads in ~1 min)


@dataclass
class Replica:
    """One replica as this process sees it. ``base`` None: an INFERENCE_BASE_URL whose model its ``/models`` says."""

    id: str
    url: str
    base: str | None
    client: InferenceClient
    started: bool = False  # started on demand: its use is written back (idle timeout)
    in_flight: int = 0
    healthy: bool = True  # until a check or a request says otherwise
    problem: str | None = None
    checked_at: float = 0.0
    used_at: float = 0.0  # when this process last wrote its use

    def rank(self, key: str) -> bytes:
        return hashlib.blake2b(f"{key}\0{self.url}".encode(), digest_size=8).digest()


@dataclass
class _Known:
    replicas: dict[str, Replica] = field(default_factory=dict)  # by URL
    loaded_at: float = -1e9
    pending: dict[str, str] = field(default_factory=dict)  # base model -> state of a replica being started


class Router:
    def __init__(
        self,
        settings: ApiSettings,
        store: ObjectStore,
        sessionmaker: Callable[[], Session],
        queue: Doorbell,
    ) -> None:
        self.settings = settings
        self.store = store
        self.sessionmaker = sessionmaker
        self.queue = queue
        self.known = _Known()
        # the operator's replicas from the settings: (id, url, base model or None when its /models says)
        self._static: list[tuple[str, str, str | None]] = []
        if settings.inference_base_url:
            self._static.append(("config-0", settings.inference_base_url.rstrip("/"), None))
        for base, urls in settings.inference_endpoints.items():
            self._static += [(f"config-{base}-{i}", url.rstrip("/"), base) for i, url in enumerate(urls)]
        self._resolved: dict[str, list[str]] = {}  # dns+ URL -> the addresses it last resolved to
        self._retired: list[Replica] = []  # replicas that left, closed once nothing is in flight on them
        self._refresh_lock = asyncio.Lock()
        self._health: asyncio.Task[None] | None = None

    # -- the list of replicas -------------------------------------------------------------------------------------

    def _client(self, url: str) -> InferenceClient:
        s = self.settings
        return InferenceClient(
            url,
            self.store,
            s.adapters_dir,
            s.inference_adapter_server_dir,
            max_adapters=s.inference_max_adapters,
            max_lora_rank=s.inference_max_lora_rank,
            timeout_seconds=s.inference_timeout_seconds,
            api_key=s.inference_api_key,
        )

    def _rows(self) -> list[InferenceReplica]:
        with self.sessionmaker() as session:
            rows = replicas.live(session, self.settings)
            session.expunge_all()
            return rows

    async def refresh(self, *, force: bool = False) -> None:
        """Reload the replicas from the settings and the database (at most every REFRESH_SECONDS)."""
        if not force and time.monotonic() - self.known.loaded_at < REFRESH_SECONDS:
            return
        async with self._refresh_lock:
            if not force and time.monotonic() - self.known.loaded_at < REFRESH_SECONDS:
                return
            rows = await run_in_threadpool(self._rows)
            wanted: dict[str, tuple[str, str | None, bool]] = {
                url: (rid, base, False) for rid, url, base in await self._expand()
            }
            pending: dict[str, str] = {}
            for row in rows:
                if row.state == ReplicaState.ready and row.url:
                    wanted.setdefault(row.url, (row.id, row.base_model, row.origin == "started"))
                else:
                    pending.setdefault(row.base_model, row.state)
            old = self.known.replicas
            fresh: dict[str, Replica] = {}
            for url, (rid, base, started) in wanted.items():
                r = old.get(url)
                if r is None or r.id != rid:
                    r = Replica(rid, url, base, old[url].client if url in old else self._client(url), started)
                    r.checked_at = 0.0
                fresh[url] = r
            # a replica that left is closed once no request of this process is on it (never under a stream)
            self._retired += [r for url, r in old.items() if url not in fresh]
            for r in [r for r in self._retired if r.in_flight <= 0]:
                self._retired.remove(r)
                await r.client.aclose()
            new = [r for url, r in fresh.items() if url not in old]
            self.known = _Known(fresh, time.monotonic(), pending)
            await asyncio.gather(*(self._check(r) for r in new if r.base is None))

    async def _expand(self) -> list[tuple[str, str, str | None]]:
        """The settings' replicas, each ``dns+http://name:port/v1`` resolved to one replica per address (a
        Kubernetes headless Service lists a Deployment's ready pods); a name that does not resolve keeps the
        addresses it last had."""
        out: list[tuple[str, str, str | None]] = []
        for rid, url, base in self._static:
            if not url.startswith("dns+"):
                out.append((rid, url, base))
                continue
            parsed = urlparse(url[4:])
            port = parsed.port or (443 if parsed.scheme == "https" else 80)
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(parsed.hostname, port, type=socket.SOCK_STREAM)
                found = sorted({str(info[4][0]) for info in infos})
            except OSError as exc:
                log.warning("inference replicas %s: %s resolves to nothing (%s)", rid, parsed.hostname, exc)
                found = self._resolved.get(url, [])
            self._resolved[url] = found
            for address in found:
                host = f"[{address}]" if ":" in address else address
                out.append((f"{rid}-{address}", parsed._replace(netloc=f"{host}:{port}").geturl(), base))
        return out

    async def _check(self, r: Replica) -> None:
        """Ask the replica's ``/models``: healthy when it answers and serves the base model it was registered for."""
        try:
            served = await asyncio.wait_for(r.client.served(), HEALTH_TIMEOUT)
        except Exception as exc:  # whatever failed, the replica is skipped until it answers again
            problem = exc.message if hasattr(exc, "message") else f"{type(exc).__name__}: {exc}"
            self._mark(r, problem or "no answer")
            return
        finally:
            r.checked_at = time.monotonic()
        if r.base is None and served["base"]:
            r.base = served["base"][0]
        if r.base not in served["base"]:
            self._mark(r, f"serves {', '.join(served['base']) or 'nothing'}, not {r.base}")
            return
        if not r.healthy:
            log.info("inference replica %s (%s) answers again", r.id, r.url)
        r.healthy, r.problem = True, None

    def _mark(self, r: Replica, problem: str) -> None:
        if r.healthy:
            log.warning("inference replica %s (%s) is skipped: %s", r.id, r.url, problem)
        r.healthy, r.problem = False, problem

    def start(self) -> None:
        """The health checks, in this process's event loop (the app's lifespan)."""
        self._health = asyncio.get_running_loop().create_task(self._health_loop())

    async def _health_loop(self) -> None:
        while True:
            try:
                await self.refresh(force=True)
                await asyncio.gather(*(self._check(r) for r in self.known.replicas.values()))
            except Exception:  # the loop outlives any one round's failure (a database restart)
                log.exception("inference health check failed")
            await asyncio.sleep(self.settings.inference_health_seconds)

    async def aclose(self) -> None:
        if self._health is not None:
            self._health.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._health
        for r in [*self.known.replicas.values(), *self._retired]:
            await r.client.aclose()

    # -- what serves what -----------------------------------------------------------------------------------------

    def of(self, base: str) -> list[Replica]:
        return [r for r in self.known.replicas.values() if r.base == base]

    def serving(self, base: str) -> Serving:
        """How ``base`` is served right now, for ``/v1/models`` (from this process's last refresh)."""
        mine = self.of(base)
        if any(r.healthy for r in mine):
            return "ready"
        if base in self.known.pending:
            return "starting"
        if mine:
            return "unavailable"
        return "on_first_use" if self.settings.serves_on_demand else "not_served"

    def order(self, base: str, key: str) -> list[Replica]:
        """The healthy replicas of ``base`` in ``key``'s rendezvous order, those at their concurrency limit last."""
        ranked = sorted((r for r in self.of(base) if r.healthy), key=lambda r: r.rank(key), reverse=True)
        limit = self.settings.inference_replica_concurrency
        return [r for r in ranked if r.in_flight < limit] + [r for r in ranked if r.in_flight >= limit]

    async def ready(self) -> str | None:
        """None when some replica answers (or one would start on demand) or none is configured at all (inference
        is off), else why not (for /readyz)."""
        await self.refresh()
        if any(r.healthy for r in self.known.replicas.values()) or self.settings.serves_on_demand:
            return None
        await asyncio.gather(*(self._check(r) for r in self.known.replicas.values()))
        if any(r.healthy for r in self.known.replicas.values()) or not self.known.replicas:
            return None
        return "; ".join(f"{r.url}: {r.problem}" for r in self.known.replicas.values())

    @property
    def configured(self) -> bool:
        """Whether this service serves models at all: replicas configured or registered, or started on demand."""
        return bool(self._static or self.known.replicas or self.settings.serves_on_demand)

    # -- forwarding -----------------------------------------------------------------------------------------------

    async def forward(
        self,
        path: str,
        body: dict[str, Any],
        target: Target,
        *,
        cache_salt: str | None = None,
        meter: Meter | None = None,
    ) -> JSONResponse | StreamingResponse:
        """Send the request to ``target``'s replica in affinity order, the next one when a replica is down."""
        await self.refresh()
        key = target.adapter or cache_salt or ""
        ordered = self.order(target.base, key) or await self._recheck(target.base, key) or await self._cold(target, key)
        last: Unavailable | None = None
        for r in ordered:
            r.in_flight += 1
            try:
                response = await r.client.forward(path, body, target, cache_salt=cache_salt, meter=meter)
            except Unavailable as exc:  # not reached, or gone mid-request: the next replica answers instead
                r.in_flight -= 1
                self._mark(r, exc.message)
                last = exc
                continue
            except BaseException:
                r.in_flight -= 1
                raise
            response.background = _then(response.background, partial(self._done, r))
            return response
        assert last is not None
        raise last

    async def _done(self, r: Replica) -> None:
        """After the answer was sent: the request leaves the replica, and a started replica's use is written (at
        most every USED_RESOLUTION seconds), which its idle timeout counts from."""
        r.in_flight -= 1
        if r.started and time.monotonic() - r.used_at > replicas.USED_RESOLUTION:
            r.used_at = time.monotonic()
            try:
                await run_in_threadpool(self._write_used, r.id)
            except Exception:  # the idle timeout then counts from an earlier use: logged, never the caller's
                log.exception("could not record the use of replica %s", r.id)

    def _write_used(self, replica_id: str) -> None:
        with self.sessionmaker() as session:
            replicas.used(session, [replica_id])

    async def _recheck(self, base: str, key: str) -> list[Replica]:
        """No healthy replica of ``base`` as last seen: ask the skipped ones (and those whose model is not known yet)
        again now, rather than wait for the next round of checks (a server that just came up serves at once)."""
        doubtful = [r for r in self.known.replicas.values() if r.base is None or (r.base == base and not r.healthy)]
        await asyncio.gather(*(self._check(r) for r in doubtful))
        return self.order(base, key)

    async def _cold(self, target: Target, key: str) -> list[Replica]:
        """No healthy replica serves ``target.base``: start one on demand and wait for it, within the deadline."""
        base = target.base
        if self.of(base):  # it has replicas, none answering
            problems = "; ".join(f"{r.id}: {r.problem}" for r in self.of(base))
            raise Unavailable(
                f"no replica of {base!r} answers ({problems})",
                code="inference_unavailable",
                headers={"Retry-After": "10"},
            )
        unknown = [r for r in self.known.replicas.values() if r.base is None]
        if unknown:  # a configured server that never answered may be the one that serves it: say so, start nothing
            raise Unavailable(
                "; ".join(r.problem or f"the inference server at {r.url} has not answered yet" for r in unknown),
                code="inference_unavailable",
                headers={"Retry-After": "10"},
            )
        if not self.settings.serves_on_demand and not self.known.replicas:
            raise Unavailable(
                "inference is not configured on this service: set INFERENCE_BASE_URL (or INFERENCE_ENDPOINTS) to "
                "OpenAI-compatible servers that load LoRA adapters (python -m worker.inference_server starts one), "
                "register one (python -m api.admin inference add), or let workers start them (INFERENCE_ON_DEMAND)",
                code="inference_not_configured",
            )
        if not self.settings.serves_on_demand:
            served = sorted({r.base for r in self.known.replicas.values() if r.base})
            raise NotFound(
                f"{target.requested!r} runs on the base model {base!r}, which no inference replica serves (served: "
                f"{', '.join(served) or 'nothing'}; python -m api.admin inference add, or INFERENCE_ON_DEMAND)",
                param="model",
                code="model_not_served",
            )
        deadline = time.monotonic() + self.settings.inference_start_wait_seconds
        row = await run_in_threadpool(self._request, base)
        while True:
            await self.refresh(force=True)
            ordered = self.order(base, key)
            if ordered:
                return ordered
            state = self.known.pending.get(base)
            if state is None:  # it failed or stopped before it was ready
                failed = await run_in_threadpool(self._row, row.id)
                raise Unavailable(
                    f"the replica of {base!r} started for this request did not start: {failed.error or failed.state}",
                    code="model_start_failed",
                    headers={"Retry-After": "30"},
                )
            if time.monotonic() >= deadline:
                raise Unavailable(
                    f"{base!r} is starting on a worker (replica {row.id}, {state}); retry in a few seconds",
                    code="model_starting",
                    headers={"Retry-After": str(STARTING_RETRY_AFTER)},
                )
            await asyncio.sleep(min(1.0, max(0.0, deadline - time.monotonic())))

    def _request(self, base: str) -> InferenceReplica:
        with self.sessionmaker() as session:
            row = replicas.request(session, self.settings, self.queue, base)
            session.expunge(row)
            return row

    def _row(self, replica_id: str) -> InferenceReplica:
        with self.sessionmaker() as session:
            row = replicas.get(session, replica_id)
            session.expunge(row)
            return row


def _then(background: BackgroundTask | None, after: Callable[[], Awaitable[None]]) -> BackgroundTasks:
    """The response's own background work (closing a stream, metering), then ``after``: a replica's request is in
    flight until its answer was sent."""
    tasks = BackgroundTasks()
    if background is not None:
        tasks.add_task(background)
    tasks.add_task(after)
    return tasks
