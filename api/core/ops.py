"""Operations: request ids and JSON logs, Prometheus metrics, readiness, and the per-key rate limit.

- Every request gets an id (``X-Request-ID`` from the caller, or a new one), returned in the response and put
  on every log line written while it is handled; logs are one JSON object per line (``LOG_FORMAT=json``).
- ``/metrics`` (Prometheus): request latency by route and status, jobs by state, the jobs each worker process
  trains now and the training-API sessions it serves (``rft_worker_jobs``, ``rft_worker_sessions``: a pool's
  tenants) and the queue depth (read at scrape time), GRPO steps recorded (a counter: its rate is the service's
  steps/s).
- ``/readyz``: 200 only when the database, the broker and the object store answer; 503 names the one that
  does not. With an inference server configured, ``checks.inference`` says whether it answers (reported as
  ``degraded``, not a 503: only the inference routes need it). ``/healthz`` stays a liveness probe.
- Rate limit: a token bucket per API key (or per client address when the service is open) on ``/v1/``;
  429 with ``Retry-After``. The buckets live in Redis when one is configured (``RATE_LIMIT_REDIS_URL``, by default
  a Redis ``BROKER_URL``), so every API process draws on one budget per key; otherwise in this process
  (api.core.ratelimit).
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import math
import time
import uuid
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from sqlalchemy import func, select, text
from starlette.types import Message, Receive, Scope, Send

from api.core.ratelimit import Limiter, make_limiter
from api.core.settings import ApiSettings
from api.db.models import Job, TrainingSession, job_leased, now, session_held
from runtime.queue import GPU_QUEUE

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
log = logging.getLogger("api")


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the request id of the request being handled (if any)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if rid := request_id.get():
            out["request_id"] = rid
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure_logging(settings: ApiSettings) -> None:
    """Add one JSON handler to the root logger (once per process) and route uvicorn's loggers through it."""
    if settings.log_format != "json":
        return
    root = logging.getLogger()
    if not any(isinstance(h.formatter, JsonFormatter) for h in root.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(JsonFormatter())
        root.addHandler(handler)
        root.setLevel(logging.INFO)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers = []
        logging.getLogger(name).propagate = True


class _StateCollector:
    """Jobs by state and the queue depth, read when Prometheus scrapes (no background polling)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def collect(self) -> Iterator[GaugeMetricFamily]:
        jobs = GaugeMetricFamily("rft_jobs", "Jobs by state", labels=["state"])
        tenants = GaugeMetricFamily(
            "rft_worker_jobs", "Jobs each worker process trains now (a pool's tenants), by worker id", labels=["worker"]
        )
        sessions = GaugeMetricFamily(
            "rft_worker_sessions", "Training-API sessions each worker process serves now, by worker", labels=["worker"]
        )
        try:
            with self.app.state.sessionmaker() as s:
                for state, n in s.execute(select(Job.status, func.count()).group_by(Job.status)):
                    jobs.add_metric([state], n)
                t = now()
                leased = select(Job.worker_id, func.count()).where(*job_leased(t)).group_by(Job.worker_id)
                for worker, n in s.execute(leased):
                    tenants.add_metric([worker], n)
                held = select(TrainingSession.worker_id, func.count()).where(*session_held(t))
                for worker, n in s.execute(held.group_by(TrainingSession.worker_id)):
                    sessions.add_metric([worker], n)
        except Exception:  # a scrape during a database restart reports nothing rather than failing
            log.exception("metrics: jobs by state")
        yield jobs
        yield tenants
        yield sessions
        depth = queue_depth(self.app.state.settings)
        if depth is not None:
            yield GaugeMetricFamily("rft_queue_depth", "Messages waiting in the gpu queue", value=depth)


def queue_depth(settings: ApiSettings) -> int | None:
    """Messages waiting in the ``gpu`` queue: Redis list length, or files in the filesystem transport."""
    try:
        if settings.broker_url and settings.broker_url.startswith("redis"):
            import redis

            return int(redis.Redis.from_url(settings.broker_url, socket_timeout=2).llen(GPU_QUEUE))
        if not settings.broker_url:
            folder = settings.broker_transport_options["data_folder_in"]
            from pathlib import Path

            return sum(1 for p in Path(folder).glob("*.msg"))
    except Exception:  # a metrics scrape survives a broker it cannot read: the gauge is left out
        log.exception("metrics: queue depth")
    return None


class ObserveMiddleware:
    """Request id, per-key rate limit and the latency histogram, as a plain ASGI middleware.

    Not ``@app.middleware("http")``: Starlette's BaseHTTPMiddleware runs every request through an extra task and
    memory streams, a sizeable share of the CPU a status poll costs (bench/api_load.py).
    """

    def __init__(self, app: Any, *, limiter: Limiter | None, latency: Histogram, limit: int) -> None:
        self.app, self.limiter, self.latency, self.limit = app, limiter, latency, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" and self.limiter is not None:
            await self.app(scope, receive, self._closing_limiter(send))
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        rid = headers.get(b"x-request-id", b"").decode("latin-1") or uuid.uuid4().hex
        token = request_id.set(rid)
        start = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode("latin-1"))]
            await send(message)

        try:
            wait = 0.0
            if self.limiter is not None and scope["path"].startswith(("/v1/", "/api/v1/")):
                client = scope.get("client")
                key = headers.get(b"authorization") or headers.get(b"x-api-key")  # /api/v1: the tinker SDK's header
                who = key or (client[0] if client else "?").encode()
                wait = await self.limiter.acquire(hashlib.sha256(who).hexdigest())
            if wait > 0:
                retry = max(1, math.ceil(wait))  # whole seconds, never early: a retry at Retry-After gets through
                body = {
                    "error": {
                        "type": "rate_limit_error",
                        "code": "rate_limited",
                        "message": f"too many requests: the limit is {self.limit} per minute per key; retry in "
                        f"{retry} s",
                        "param": None,
                    }
                }
                response = JSONResponse(body, status_code=429, headers={"Retry-After": str(retry)})
                await response(scope, receive, send_with_id)
                return
            await self.app(scope, receive, send_with_id)
        finally:
            request_id.reset(token)
            path = getattr(scope.get("route"), "path", "unmatched")
            self.latency.labels(scope["method"], path, str(status)).observe(time.perf_counter() - start)

    def _closing_limiter(self, send: Send) -> Send:
        """The lifespan's ``send``, closing the limiter's connections when the app has shut down (the app's
        lifespan does not know the limiter: it belongs to this middleware)."""
        limiter = self.limiter
        assert limiter is not None

        async def send_closing(message: Message) -> None:
            if message["type"] == "lifespan.shutdown.complete":
                await limiter.aclose()
            await send(message)

        return send_closing


def install(app: FastAPI, settings: ApiSettings) -> None:
    """Middleware, /metrics and /readyz on ``app``."""
    registry = CollectorRegistry()  # one per app: tests build many apps in one process
    app.state.steps_counter = Counter(
        "rft_grpo_steps", "GRPO steps recorded (metrics events accepted from workers)", registry=registry
    )
    latency = Histogram("rft_http_request_seconds", "Request latency", ["method", "route", "status"], registry=registry)
    registry.register(_StateCollector(app))
    limiter = make_limiter(settings.rate_limit_per_minute, settings.rate_limit_redis)

    app.add_middleware(ObserveMiddleware, limiter=limiter, latency=latency, limit=settings.rate_limit_per_minute)

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type="text/plain; version=0.0.4")

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> JSONResponse:
        def core() -> dict[str, str]:
            return {"database": _check_db(app), "broker": _check_broker(app), "object_store": _check_store(app)}

        checks = await run_in_threadpool(core)
        ok = all(v == "ok" for v in checks.values())
        body: dict[str, Any] = {"status": "ready" if ok else "not ready", "checks": checks}
        inference = getattr(app.state, "inference", None)
        if inference is not None and inference.configured:
            # Reported, not required: without the inference server only /v1/chat/completions and /v1/completions
            # fail (503); taking the whole API out of its load balancer would stop uploads, jobs and workers too.
            problem = await inference.ready()
            checks["inference"] = "ok" if problem is None else problem[:300]
            if problem is not None:
                body["degraded"] = ["inference"]
        return JSONResponse(body, status_code=200 if ok else 503)


def _check_db(app: FastAPI) -> str:
    try:
        with app.state.sessionmaker() as s:
            s.execute(text("select 1"))
        return "ok"
    except Exception as exc:  # a health check reports whatever failed, it never fails itself
        return f"{type(exc).__name__}: {exc}"[:300]


def _check_broker(app: FastAPI) -> str:
    try:
        app.state.queue.ping()
        return "ok"
    except Exception as exc:  # a health check reports whatever failed, it never fails itself
        return f"{type(exc).__name__}: {exc}"[:300]


def _check_store(app: FastAPI) -> str:
    try:
        app.state.store.exists("readyz-probe")
        return "ok"
    except Exception as exc:  # a health check reports whatever failed, it never fails itself
        return f"{type(exc).__name__}: {exc}"[:300]
