"""FastAPI application factory. The lifespan builds the engine, the object store and the job queue."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.routing import APIRoute

from api.billing import routes as billing
from api.core.callers import KeyCache
from api.core.errors import install_handlers
from api.core.ops import configure_logging
from api.core.ops import install as install_ops
from api.core.queue import JobQueue
from api.core.settings import ApiSettings, get_settings
from api.core.web import install as install_dashboard
from api.db.session import make_engine, make_read_sessionmaker, make_sessionmaker
from api.evals import internal_routes as evals_internal
from api.evals import routes as evals
from api.files import routes as files
from api.fleet import routes as fleet
from api.graders import routes as graders
from api.inference import admin_routes as inference_admin
from api.inference import internal_routes as inference_internal
from api.inference import routes as inference
from api.inference.router import Router
from api.jobs import internal_routes as jobs_internal
from api.jobs import output_routes as job_outputs
from api.jobs import routes as jobs
from api.jobs.polls import Polls
from api.models import internal_routes as models_internal
from api.models import routes as models
from api.reaper import Reaper
from api.secrets import routes as secrets
from api.training_api import internal_routes as training_internal
from api.training_api import routes as training
from api.usage import routes as usage
from api.webhooks import routes as webhooks
from api.webhooks.dispatch import start_dispatcher

GC_YOUNG_THRESHOLD = 50_000  # allocations less deallocations between collections of the youngest generation


def _operation_id(route: APIRoute) -> str:
    """Stable operation ids so the generated client reads ``jobs.create_job(...)``."""
    return route.name


def create_app(settings: ApiSettings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = make_engine(settings.db_url)
        app.state.settings = settings
        app.state.sessionmaker = make_sessionmaker(engine)
        app.state.read_sessionmaker = make_read_sessionmaker(engine)
        app.state.key_cache = KeyCache()  # what keys resolved to, trusted only under a guard (api.core.callers)
        app.state.polls = Polls(engine)  # status polls and event pages on plain SQL (api.jobs.polls)
        app.state.store = settings.store()
        app.state.queue = JobQueue(settings)
        # /v1/chat/completions and /v1/completions, routed across the inference replicas (api.inference.router)
        app.state.inference = Router(settings, app.state.store, app.state.sessionmaker, app.state.queue)
        app.state.inference.start()
        settings.internal_token  # noqa: B018 - create the embedded worker token before any worker asks
        # Everything built so far (imports, the app, its routes and schemas) lives as long as the process: keep it
        # out of the cyclic collector, whose full passes over it stall requests (bench/api_load.py shows the tail:
        # docs/benchmarks.md, "The API under load").
        gc.collect()
        gc.freeze()
        # A request holds a few thousand container objects at its peak (an event page's rows, their JSON and
        # models) and frees them by reference counting, leaving almost no cycles. At the default threshold of 700
        # the young collection ran on nearly every request and promoted the objects of the requests in flight to
        # the older generations, whose long passes then held the GIL while requests waited. At 50,000 none runs in
        # a whole bench.api_load run (docs/benchmarks.md, "The API under load"). Cycles, when they come, are still
        # collected.
        thresholds = gc.get_threshold()
        gc.set_threshold(GC_YOUNG_THRESHOLD, *thresholds[1:])
        dispatcher = start_dispatcher(settings, app.state.sessionmaker)  # webhook deliveries, off the request path
        reaper = None
        if settings.reaper:  # lost workers and lost doorbells (api.reaper)
            reaper = Reaper(settings, app.state.sessionmaker, app.state.queue).start()
        yield
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        if reaper is not None:
            reaper.stop()
        if dispatcher is not None:
            dispatcher.stop()
        await app.state.inference.aclose()
        engine.dispose()

    app = FastAPI(
        title="RFT service",
        version="0.1.0",
        description="Reinforcement fine-tuning (GRPO) as a service, in the shape of OpenAI's fine-tuning API.",
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
    )
    install_handlers(app)
    configure_logging(settings)
    install_ops(app, settings)
    for router in (
        files.router,
        billing.estimate_router,  # before the jobs' routes: /estimate is no job id
        jobs.router,
        job_outputs.router,
        job_outputs.downloads,
        graders.router,
        models.router,
        models.admin,
        models_internal.router,
        evals.router,
        evals_internal.router,
        inference.router,
        inference_admin.admin,
        inference_internal.router,
        webhooks.router,
        secrets.router,
        usage.router,
        usage.admin,
        billing.router,
        billing.admin,
        fleet.admin,
        jobs_internal.router,
        training.runs_router,
        training_internal.router,
        training.router,  # last: its catch-all answers calls of the SDK this server does not serve
    ):
        app.include_router(router)

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    install_dashboard(app)
    return app
