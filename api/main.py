"""FastAPI application factory. The lifespan builds the engine, the object store and the job queue."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.routing import APIRoute

from api.callers import KeyCache
from api.db.session import make_engine, make_read_sessionmaker, make_sessionmaker
from api.errors import install_handlers
from api.ops import configure_logging
from api.ops import install as install_ops
from api.queue import JobQueue
from api.routes import downloads, evals, files, graders, inference, internal, jobs, models, streams, webhooks
from api.services.inference import InferenceClient
from api.services.polls import Polls
from api.services.reaper import Reaper
from api.services.webhook_dispatch import start_dispatcher
from api.settings import ApiSettings, get_settings
from api.web import install as install_dashboard

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
        app.state.key_cache = KeyCache()  # what keys resolved to, trusted only under a guard (api.callers)
        app.state.polls = Polls(engine)  # status polls and event pages on plain SQL (api.services.polls)
        app.state.store = settings.store()
        app.state.queue = JobQueue(settings)
        app.state.inference = None
        if settings.inference_base_url:  # /v1/chat/completions and /v1/completions (api.services.inference)
            app.state.inference = InferenceClient(
                settings.inference_base_url,
                app.state.store,
                settings.adapters_dir,
                settings.inference_adapter_server_dir,
                max_adapters=settings.inference_max_adapters,
                max_lora_rank=settings.inference_max_lora_rank,
                timeout_seconds=settings.inference_timeout_seconds,
                api_key=settings.inference_api_key,
            )
        settings.internal_token  # noqa: B018 - create the embedded worker token before any worker asks
        # Everything built so far (imports, the app, its routes and schemas) lives as long as the process: keep it
        # out of the cyclic collector, whose full passes over it stalled a request for ~0.3 s (bench/api_load.py).
        gc.collect()
        gc.freeze()
        # A request holds a few thousand container objects at its peak (an event page's rows, their JSON and
        # models) and frees them by reference counting, leaving almost no cycles. At the default threshold of 700
        # the young collection ran on nearly every request and promoted the objects of the requests in flight to
        # the older generations, whose passes then held the GIL for up to 132 ms: under load (bench/api_load.py,
        # 150 req/s) 0.5 ms of the API's CPU a request went to the collector. At 50,000 none ran in a whole bench
        # run. (Cycles, when they come, are still collected.)
        thresholds = gc.get_threshold()
        gc.set_threshold(GC_YOUNG_THRESHOLD, *thresholds[1:])
        dispatcher = start_dispatcher(settings, app.state.sessionmaker)  # webhook deliveries, off the request path
        reaper = None
        if settings.reaper:  # lost workers and lost doorbells (api.services.reaper)
            reaper = Reaper(settings, app.state.sessionmaker, app.state.queue).start()
        yield
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        if reaper is not None:
            reaper.stop()
        if dispatcher is not None:
            dispatcher.stop()
        if app.state.inference is not None:
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
        jobs.router,
        streams.router,
        downloads.router,
        graders.router,
        models.router,
        models.admin,
        models.internal,
        evals.router,
        evals.internal,
        inference.router,
        webhooks.router,
        internal.router,
    ):
        app.include_router(router)

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    install_dashboard(app)
    return app
