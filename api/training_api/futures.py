"""``retrieve_future``: a request's result, held open until it is there (a long poll).

The SDK polls again at once after each answer, with a 45 s timeout and no pause
(docs/architecture/tinker-protocol.md §3), so the call waits here up to ``training_poll_seconds`` (default 20 s),
looking at the request row when the worker's result is posted to this process (api.core.wakeups) and every 50 ms
to 0.5 s otherwise, and answers ``try_again`` when the time is up. Each look is one indexed read in the threadpool;
the waiting itself costs the event loop nothing.

The answer, by what the request became:
- done: the worker's typed result (runtime.training_api.Result) shaped here into the SDK's answer: forward/backward
  and sample results as protobuf (the SDK refuses them as JSON), the others as JSON in the SDK's response shapes
  (``sdk_json``);
- failed: ``{"error", "category"}``, which the SDK raises as ``RequestFailedError`` with that category (``user``
  for what the caller can fix, ``server`` for a lost worker).
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from typing import Any

from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from sqlalchemy.orm import Session, sessionmaker

from api.core.wakeups import Wakeups, request_key, wait
from api.db.models import TrainingRequest, TrainingRequestStatus
from api.training_api.service import stored_request
from api.training_api.wire import encode_forward_backward, encode_sample
from runtime import training_api as tc

PROTOBUF = "application/x-protobuf"
log = logging.getLogger(__name__)


def _look(sessions: sessionmaker[Session], project_id: str, request_id: str) -> TrainingRequest | bool | None:
    """The request when it has finished, None while it has not, False when the caller cannot see it."""
    with sessions() as db:
        row = db.get(TrainingRequest, request_id)
        if row is None or row.project_id != project_id:
            return False
        if row.status in (TrainingRequestStatus.done, TrainingRequestStatus.failed):
            db.expunge(row)
            return row
        return None


def answer(row: TrainingRequest) -> Response:
    """A finished request's answer as the SDK reads it: its typed result (runtime.training_api) shaped into the SDK's
    protobuf or JSON, or its error."""
    if row.status == TrainingRequestStatus.failed:
        error = row.error or {}
        return _failed(error.get("message", "the request failed"), error.get("category", "unknown"))
    if row.result is None:
        return _failed("the result of this request expired (results are kept for a day)", "user")
    try:
        result = tc.parse_result(row.result)
        match result:
            case tc.ForwardBackwardResult():
                return Response(encode_forward_backward(result.logprobs, result.metrics), media_type=PROTOBUF)
            case tc.SampleResult():
                return Response(encode_sample(result.sequences, result.prompt_logprobs), media_type=PROTOBUF)
            case _:
                return JSONResponse(sdk_json(row, result))
    except (ValidationError, ValueError, struct.error) as exc:  # an answer the SDK can read, never a 500 it would
        log.exception("request %s: its result cannot be answered", row.id)  # retry without a pause
        return _failed(f"the worker's result could not be encoded: {type(exc).__name__}: {exc}", "server")


def sdk_json(row: TrainingRequest, result: tc.Result) -> dict[str, Any]:
    """The SDK's JSON answer of a request answered in JSON (every kind but forward_backward and sample): what the
    worker computed beside what the API chose when it took the call (the run, the checkpoint's path)."""
    match result, stored_request(row):
        case tc.CreateModelResult() | tc.LoadWeightsResult(), _:
            return {"model_id": row.target, "type": result.kind}
        case tc.OptimStepResult(), _:
            return {"metrics": result.metrics, "type": result.kind}
        case tc.SaveWeightsResult() | tc.SaveForSamplerResult(), tc.SaveWeights(to=to) | tc.SaveForSampler(to=to) if to:
            return {"path": to.tinker_path, "size_bytes": result.size_bytes, "type": result.kind}  # in the store
        case tc.SaveForSamplerResult(), tc.SaveForSampler(sampler_id=str() as sid):  # kept on the session's worker
            return {"sampling_session_id": sid, "type": result.kind}
    raise ValueError(f"a {result.kind} result does not answer a {row.kind} request")


def _failed(message: str, category: str) -> Response:
    """A failed future, which the SDK raises as RequestFailedError with this category."""
    return JSONResponse({"error": message, "category": category})


async def retrieve(
    sessions: sessionmaker[Session], wakeups: Wakeups, project_id: str, request_id: str, hold: float
) -> Response:
    with wakeups.watch(request_key(request_id)) as woken:  # the worker's result, posted to this process, wakes it
        return await _retrieve(sessions, woken, project_id, request_id, hold)


async def _retrieve(
    sessions: sessionmaker[Session], woken: asyncio.Event, project_id: str, request_id: str, hold: float
) -> Response:
    deadline = time.monotonic() + hold
    pause = 0.05
    while True:
        found = await run_in_threadpool(_look, sessions, project_id, request_id)
        if found is False:
            return JSONResponse(
                {
                    "error": {
                        "type": "not_found_error",
                        "code": None,
                        "message": f"no request {request_id!r}",
                        "param": "request_id",
                    }
                },
                status_code=404,
            )
        if isinstance(found, TrainingRequest):
            return answer(found)
        if time.monotonic() + pause > deadline:
            return JSONResponse({"type": "try_again", "request_id": request_id, "queue_state": "active"})
        await wait(woken, pause)
        pause = min(pause * 1.5, 0.5)
