"""``/v1/chat/completions`` and ``/v1/completions``: OpenAI's sampling routes for base models, fine-tuned models
and checkpoints, forwarded to the inference server (api.inference.service) after the ownership check."""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse
from sqlalchemy.orm import Session

from api.core.deps import CurrentProject, SessionDep, SettingsDep
from api.core.errors import ERROR_RESPONSES
from api.core.settings import ApiSettings
from api.inference.router import Router
from api.inference.schemas import ChatCompletionRequest, CompletionRequest
from api.models import served as served_models
from api.models import service as model_registry
from api.usage import metering

router = APIRouter(prefix="/v1", tags=["inference"], responses=ERROR_RESPONSES)
log = logging.getLogger(__name__)

_ANSWER: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "OpenAI's completion object, or with `stream: true` its chunks as server-sent events.",
        "content": {"application/json": {"schema": {"type": "object"}}, "text/event-stream": {}},
    },
    502: {"description": "The inference server failed the request"},
    503: {"description": "No replica answers, or the model's replica is starting (`model_starting`, with Retry-After)"},
}


def client(request: Request) -> Router:
    router: Router = request.app.state.inference
    return router


async def _forward(
    request: Request,
    path: str,
    body: ChatCompletionRequest | CompletionRequest,
    session: Session,
    settings: ApiSettings,
    project: str,
) -> JSONResponse | StreamingResponse:
    inference = client(request)
    target = await run_in_threadpool(_resolve, session, settings, project, body.model)
    session.close()  # nothing more to read: the connection goes back to the pool before a long generation
    meter = partial(_meter, request.app.state.sessionmaker, project, body.model)
    return await inference.forward(
        path, body.model_dump(exclude_unset=True), target, cache_salt=cache_salt(settings, project), meter=meter
    )


async def _meter(sessionmaker: Callable[[], Session], project: str, model: str, usage: dict[str, Any]) -> None:
    """Count an answer's tokens for the project (after the answer was sent; a failure here is logged, never the
    caller's)."""
    tokens = metering.answer_tokens(usage)
    if tokens:
        try:
            await run_in_threadpool(metering.count_inference, sessionmaker, project, model, tokens)
        except Exception:  # after the answer was sent: a metering failure is logged, never the caller's
            log.exception("could not meter %d inference tokens of %s", tokens, project)


def _resolve(session: Session, settings: ApiSettings, project: str, model: str) -> served_models.Target:
    """The request's target (a database read: run off the event loop)."""
    base = [model] if model_registry.find(session, settings, model) is not None else []
    return served_models.resolve(session, project, model, base)


def cache_salt(settings: ApiSettings, project: str) -> str:
    """vLLM's ``cache_salt`` for ``project``: prefix-cache blocks are shared within a project, never across (a
    secret-keyed hash, so no caller can compute another project's salt; it replaces any salt the caller sent)."""
    key = settings.internal_token.encode()
    return hmac.new(key, f"inference-cache:{project}".encode(), hashlib.sha256).hexdigest()


@router.post("/chat/completions", response_model=None, responses=_ANSWER)
async def create_chat_completion(
    body: ChatCompletionRequest, request: Request, session: SessionDep, settings: SettingsDep, project: CurrentProject
) -> JSONResponse | StreamingResponse:
    """A chat completion from a base model, a fine-tuned model or a checkpoint of this project (another project's
    model is 404). The first request for a fine-tuned model loads its adapter into the replica its adapter is
    routed to; a model no replica serves yet is started on a worker where the service does that (503
    ``model_starting`` with Retry-After while it starts)."""
    return await _forward(request, "/chat/completions", body, session, settings, project)


@router.post("/completions", response_model=None, responses=_ANSWER)
async def create_completion(
    body: CompletionRequest, request: Request, session: SessionDep, settings: SettingsDep, project: CurrentProject
) -> JSONResponse | StreamingResponse:
    """A text completion (no chat template) from a base model, a fine-tuned model or a checkpoint."""
    return await _forward(request, "/completions", body, session, settings, project)
