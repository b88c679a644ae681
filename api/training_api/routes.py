"""The training API's routes, two front doors on one domain:

- ``router``: ``/api/v1`` in the shape the open ``tinker`` SDK speaks (0.38.0; the calls and their wire format:
  docs/architecture/tinker-protocol.md), so a script written for it runs here with only ``base_url`` and the key
  set. The SDK is this API's client, not the generated one, so these routes stay out of openapi.json; the guide
  lists the calls supported (docs/guides/own-loop.md).
- ``runs_router``: ``/v1/training_runs``, the runs as the dashboard and the generated client see them (in
  openapi.json).

Thin: parse, call api.training_api.service (rules, requests), api.training_api.futures (the long-polled results)
or api.training_api.runs (the runs on /v1), shape the answer.

Auth: the SDK sends its key as ``X-API-Key`` and insists it starts with ``tml-``; a project key of this service
with that prefix in front (``tml-rft_…``) opens its project, exactly as ``Authorization: Bearer rft_…`` does on
``/v1``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response, StreamingResponse
from sqlalchemy.orm import Session

from api.checkpoints.downloads import TAR, tar_response
from api.core.callers import resolve
from api.core.deps import CurrentProject, QueueDep, SessionDep, SettingsDep, StoreDep
from api.core.errors import ERROR_RESPONSES, InvalidRequest, NotFound, TooLarge
from api.core.pagination import ListResponse
from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.db.models import TrainingSessionStatus
from api.training_api import futures, listing, runs, service
from api.training_api import schemas as s
from api.training_api.wire import WireError, decode_forward_backward
from grpo_core.training_api.spec import BatchError, Datum, check_batch, check_sampling
from runtime import training_api as tc

KEY_PREFIX = "tml-"
MAX_FORWARD_BACKWARD_BYTES = 64 << 20  # the SDK splits a batch into chunks of at most 5 MB


def tinker_project(request: Request, settings: SettingsDep, x_api_key: Annotated[str | None, Header()] = None) -> str:
    """The caller's project from ``X-API-Key: tml-<key>`` (api.core.callers.resolve, as a bearer key)."""
    key = x_api_key[len(KEY_PREFIX) :] if x_api_key and x_api_key.startswith(KEY_PREFIX) else x_api_key
    with request.app.state.read_sessionmaker() as db:
        return resolve(settings, db, f"Bearer {key}" if key else None)[0]


Project = Annotated[str, Depends(tinker_project)]
router = APIRouter(prefix="/api/v1", tags=["training"], include_in_schema=False)

CLIENT_CONFIG = {
    # plain HTTP/1.1 JSON (the SDK's pyqwest transport is for its hosted service), the key sent as is, JSON sample
    # requests answered through retrieve_future, no server-side custom losses, no compression
    "use_pyqwest_transport": False,
    "pjwt_auth_enabled": False,
    "sample_use_retrieve_futures": False,
    "custom_loss_server_side": False,
    "sample_join_sampling_session": False,
    "proto_compress_fwdbwd": False,
}


def _future(row: Any, **extra: Any) -> dict[str, Any]:
    return {"request_id": row.id, **extra}


@router.post("/client/config")
def client_config() -> dict[str, Any]:
    return CLIENT_CONFIG


@router.post("/client/dynamic_config")
def dynamic_config() -> dict[str, Any]:
    return {"refresh_interval_sec": 300, "sample_cancel_enabled": False, "sample_cancel_max_batch_size": 64}


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.post("/telemetry")
def telemetry(_: Project) -> dict[str, str]:
    return {"status": "accepted"}  # the SDK's usage events: not kept


@router.get("/get_server_capabilities")
def capabilities(db: SessionDep, settings: SettingsDep, _: Project) -> dict[str, Any]:
    return {"supported_models": listing.capabilities(db, settings)}


@router.post("/create_session")
def create_session(body: s.CreateSession, db: SessionDep, project: Project) -> dict[str, Any]:
    row = service.create_session(db, project, body.tags, body.user_metadata, body.sdk_version)
    return {"session_id": row.id, "type": "create_session"}


@router.post("/session_heartbeat")
def session_heartbeat(body: s.SessionRef, db: SessionDep, project: Project) -> Response:
    row = service.heartbeat(db, project, body.session_id)
    if row.status != TrainingSessionStatus.active:  # 410 ends the SDK's heartbeat loop
        return JSONResponse({"error": f"session {row.id} is {row.status}"}, status_code=410)
    return JSONResponse({"type": "session_heartbeat"})


@router.post("/sessions/{session_id}/finish")
def finish_session(
    session_id: str, db: SessionDep, project: Project, body: s.FinishSession | None = None
) -> dict[str, Any]:
    reason = ((body.reason if body else None) or {}).get("type")
    row = service.finish_session(db, project, session_id, reason)
    return {"session_id": row.id, "status": row.status}


@router.post("/create_model")
def create_model(
    body: s.CreateModel, db: SessionDep, queue: QueueDep, settings: SettingsDep, project: Project
) -> dict[str, Any]:
    lora = (body.lora_config or s.LoraIn()).model_dump()
    if body.optimizer_config and body.optimizer_config.get("type", "adamw") != "adamw":
        raise InvalidRequest("only the adamw optimizer is supported", param="optimizer_config.type")
    row = service.create_run(
        db, queue, settings, project, body.session_id, body.model_seq_id, body.base_model, lora, body.user_metadata
    )
    return _future(row, model_id=row.target)


@router.post("/get_info")
def get_info(body: s.ModelRef, db: SessionDep, settings: SettingsDep, project: Project) -> dict[str, Any]:
    return listing.info(db, settings, service.get_run(db, project, body.model_id))


@router.post("/forward_backward")
async def forward_backward(
    request: Request, db: SessionDep, queue: QueueDep, settings: SettingsDep, project: Project
) -> dict[str, Any]:
    if "zstd" in request.headers.get("content-encoding", ""):
        raise InvalidRequest("zstd bodies are not supported (this server never asks for them)", param="body")
    raw = bytearray()
    async for part in request.stream():
        raw += part
        if len(raw) > MAX_FORWARD_BACKWARD_BYTES:
            raise TooLarge(
                f"a forward_backward body over {MAX_FORWARD_BACKWARD_BYTES >> 20} MiB: send fewer datums per call "
                "(the SDK sends at most 5 MB)",
                param="body",
            )
    return await run_in_threadpool(_forward_backward, bytes(raw), db, queue, settings, project)


def _forward_backward(raw: bytes, db: Session, queue: Doorbell, settings: ApiSettings, project: str) -> dict[str, Any]:
    try:
        req = decode_forward_backward(raw)
    except WireError as exc:
        raise InvalidRequest(str(exc), param=exc.param) from None
    data = [Datum(tokens=t, inputs=i) for t, i in req.data]
    try:
        check_batch(req.loss_fn, data, req.config, vocab_size=None, max_tokens=None)
    except BatchError as exc:
        raise InvalidRequest(exc.message, param=exc.param, code="invalid_batch") from None
    request = tc.ForwardBackward(
        loss_fn=req.loss_fn,
        config=req.config,
        forward_only=req.forward_only,
        data=[tc.DatumIn(tokens=t, inputs=i) for t, i in req.data],
    )
    seq = req.seq_id or None  # proto3: 0 is "not sent" (the SDK numbers from 1)
    row = service.run_request(db, queue, settings, project, req.model_id, request, client_seq=seq)
    return _future(row, model_id=req.model_id)


@router.post("/optim_step")
def optim_step(
    body: s.OptimStep, db: SessionDep, queue: QueueDep, settings: SettingsDep, project: Project
) -> dict[str, Any]:
    if body.adam_params is None:
        kind = (body.optimizer_params or {}).get("type", "?")
        raise InvalidRequest(f"optimizer {kind!r} is not supported: pass AdamParams", param="optimizer_params")
    request = tc.OptimStep(adam=tc.Adam(**body.adam_params.model_dump()))
    row = service.run_request(db, queue, settings, project, body.model_id, request, body.seq_id)
    return _future(row, model_id=body.model_id)


@router.post("/save_weights")
def save_weights(
    body: s.SaveWeights, db: SessionDep, queue: QueueDep, settings: SettingsDep, project: Project
) -> dict[str, Any]:
    service.get_run(db, project, body.model_id)
    first = service.replay(db, body.model_id, body.seq_id)  # a retry, maybe of a save that is done by now
    if first is not None:
        return _future(first, model_id=body.model_id)
    to = service.checkpoint_target(db, project, body.model_id, "training", body.path, body.overwrite)
    row = service.run_request(db, queue, settings, project, body.model_id, tc.SaveWeights(to=to), body.seq_id)
    return _future(row, model_id=body.model_id)


@router.post("/save_weights_for_sampler")
def save_for_sampler(
    body: s.SaveForSampler, db: SessionDep, queue: QueueDep, settings: SettingsDep, project: Project
) -> dict[str, Any]:
    run = service.get_run(db, project, body.model_id)
    first = service.replay(db, body.model_id, body.seq_id)
    if first is not None:
        return _future(first, model_id=body.model_id)
    if body.path is not None:
        to = service.checkpoint_target(db, project, body.model_id, "sampler", body.path, overwrite=False)
        request = tc.SaveForSampler(to=to)
    elif body.sampling_session_seq_id is not None:
        sid = service.snapshot_sampler_id(db, run, body.sampling_session_seq_id)
        request = tc.SaveForSampler(sampler_id=sid)
    else:
        raise InvalidRequest("save_weights_for_sampler needs a path or a sampling_session_seq_id", param="path")
    row = service.run_request(db, queue, settings, project, body.model_id, request, body.seq_id)
    return _future(row, model_id=body.model_id)


@router.post("/load_weights")
def load_weights(
    body: s.LoadWeights, db: SessionDep, queue: QueueDep, settings: SettingsDep, project: Project
) -> dict[str, Any]:
    row = service.load_weights(db, queue, settings, project, body)
    return _future(row, model_id=row.target)


@router.post("/create_sampling_session")
def create_sampling_session(
    body: s.CreateSampler, db: SessionDep, settings: SettingsDep, project: Project
) -> dict[str, Any]:
    row = service.create_sampler(
        db, settings, project, body.session_id, body.sampling_session_seq_id, body.base_model, body.model_path
    )
    return {"sampling_session_id": row.id, "type": "create_sampling_session"}


@router.get("/samplers/{sampling_session_id}")
def get_sampler(sampling_session_id: str, db: SessionDep, project: Project) -> dict[str, Any]:
    row = service.get_sampler(db, project, sampling_session_id)
    return {"sampler_id": row.id, "base_model": row.base_model, "model_path": service.model_path_of(db, row)}


@router.post("/asample")
def asample(body: s.Sample, db: SessionDep, queue: QueueDep, settings: SettingsDep, project: Project) -> dict[str, Any]:
    if body.sampling_session_id is None:
        raise InvalidRequest(
            "asample needs a sampling_session_id (create a sampling client first)", param="sampling_session_id"
        )
    row = service.get_sampler(db, project, body.sampling_session_id)
    session = service.active_session(db, project, row.session_id)
    tokens: list[int] = []
    for i, chunk in enumerate(body.prompt.chunks):
        if chunk.type != "encoded_text":
            raise InvalidRequest(f"{chunk.type} chunks are not supported (text only)", param=f"prompt.chunks[{i}]")
        tokens += chunk.tokens
    p = body.sampling_params
    if body.topk_prompt_logprobs or body.topk_sample_logprobs:
        raise InvalidRequest("top-k log-probs are not supported", param="topk_prompt_logprobs")
    stop = [p.stop] if isinstance(p.stop, str) else p.stop
    max_tokens = p.max_tokens if p.max_tokens is not None else 256
    try:
        check_sampling(max_tokens, p.temperature, p.top_p, p.top_k, body.num_samples, prompt=tokens, stop=stop)
    except BatchError as exc:
        raise InvalidRequest(exc.message, param=exc.param, code="invalid_sampling") from None
    request = tc.Sample(
        sampler=service.sampler_spec(db, settings, row),
        prompt=tokens,
        num_samples=body.num_samples,
        max_tokens=max_tokens,
        temperature=p.temperature,
        top_p=p.top_p,
        seed=p.seed,
        stop=stop,
        prompt_logprobs=body.prompt_logprobs,
    )
    req = service.enqueue(db, queue, settings, session, row.id, request, client_seq=body.seq_id)
    return _future(req, sample_sequence_ids=[f"{req.id}:{i}" for i in range(body.num_samples)])


@router.post("/retrieve_future")
async def retrieve_future(body: s.Retrieve, request: Request, settings: SettingsDep, project: Project) -> Response:
    return await futures.retrieve(
        request.app.state.read_sessionmaker,
        request.app.state.queue.wakeups,
        project,
        body.request_id,
        settings.training_poll_seconds,
    )


@router.get("/training_runs")
def training_runs(db: SessionDep, project: Project, limit: int = 20, offset: int = 0) -> dict[str, Any]:
    return listing.runs(db, project, limit, offset)


@router.get("/training_runs/{training_run_id}")
def training_run(training_run_id: str, db: SessionDep, project: Project) -> dict[str, Any]:
    return listing.run(db, service.get_run(db, project, training_run_id))


@router.get("/training_runs/{training_run_id}/checkpoints")
def run_checkpoints(training_run_id: str, db: SessionDep, project: Project) -> dict[str, Any]:
    service.get_run(db, project, training_run_id)
    return listing.checkpoints_page(db, project, training_run_id, 1000, 0)


@router.delete("/training_runs/{training_run_id}/checkpoints/{tinker_checkpoint_id:path}")
def delete_checkpoint(
    training_run_id: str, tinker_checkpoint_id: str, request: Request, db: SessionDep, project: Project
) -> dict[str, Any]:
    listing.delete(db, request.app.state.store, project, training_run_id, tinker_checkpoint_id)
    return {"deleted": True}


@router.get("/checkpoints")
def user_checkpoints(db: SessionDep, project: Project, limit: int = 100, offset: int = 0) -> dict[str, Any]:
    return listing.checkpoints_page(db, project, None, limit, offset)


@router.post("/weights_info")
def weights_info(body: s.WeightsInfo, db: SessionDep, project: Project) -> dict[str, Any]:
    return listing.weights_info(db, project, body.tinker_path)


@router.api_route("/{rest:path}", methods=["GET", "POST", "PUT", "DELETE"])
def unsupported(rest: str) -> Response:
    raise NotFound(
        f"/api/v1/{rest} is not supported by this server (its training API: docs/guides/own-loop.md lists the "
        "calls it serves)",
        code="unsupported_call",
    )


# ---------------------------------------------------------------- /v1/training_runs
# The runs of the training API as the dashboard and the generated client see them, beside the jobs (in openapi.json):
# the list, one run with its checkpoints, its per-step series, the metrics the client reports for its steps (a reward
# the service cannot see), and a checkpoint's download.
runs_router = APIRouter(prefix="/v1/training_runs", tags=["training_runs"], responses=ERROR_RESPONSES)


@runs_router.get("")
def list_training_runs(
    session: SessionDep,
    settings: SettingsDep,
    project: CurrentProject,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    after: str | None = None,
) -> ListResponse[s.TrainingRunObject]:
    """The project's training runs (training clients of the training API), newest first."""
    page = runs.list_runs(session, project, limit, after)
    return ListResponse[s.TrainingRunObject].page(runs.views(session, settings, page.items), page.has_more)


@runs_router.get("/{training_run_id}")
def retrieve_training_run(
    training_run_id: str, session: SessionDep, settings: SettingsDep, project: CurrentProject
) -> s.TrainingRunObject:
    return runs.views(session, settings, [service.get_run(session, project, training_run_id)])[0]


@runs_router.get("/{training_run_id}/metrics")
def list_training_run_metrics(training_run_id: str, session: SessionDep, project: CurrentProject) -> s.RunMetrics:
    """One row per optimizer step: the loss of its forward_backward calls, the step's gradient norm and learning
    rate, and the metrics the client reported for it."""
    return s.RunMetrics(data=runs.series(session, project, training_run_id))


@runs_router.post("/{training_run_id}/metrics")
def report_training_run_metrics(
    training_run_id: str, body: s.ReportMetrics, session: SessionDep, project: CurrentProject
) -> s.RunStep:
    """Report metrics of one step of your loop (e.g. ``{"step": 3, "metrics": {"reward": 0.75}}``): the dashboard
    draws them beside the loss."""
    return runs.report(session, project, training_run_id, body)


@runs_router.get(
    "/{training_run_id}/checkpoints/{training_checkpoint_id}/content",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {TAR: {}},
            "description": "A sampler checkpoint: adapter_config.json and adapter_model.safetensors (PeftModel); "
            "a training checkpoint: the same and the optimizer's state (optimizer.pt, state.json)",
        },
        302: {"description": "On S3: a presigned URL of the tar, valid for 5 minutes (Location header)"},
    },
)
def download_training_checkpoint(
    training_run_id: str, training_checkpoint_id: str, session: SessionDep, store: StoreDep, project: CurrentProject
) -> Response:
    """A checkpoint of the run, by its ``ftckpt-`` id, as a tar: streamed from a local store, or a 302 to a
    presigned S3 URL (5 minutes), as a job's checkpoint is."""
    ckpt = runs.get_checkpoint(session, project, training_run_id, training_checkpoint_id)
    return tar_response(store, ckpt)
