"""The training API's rules (no FastAPI): sessions, training runs, sampling clients, and every call that returns a
future as a request row the session's worker takes in order.

What is checked here, before anything is stored: the caller's project owns what it names (another project's
session, run, sampling client or checkpoint is a 404), the session is still active (a finished, expired or lost
session is a 400 saying which, and what to do), the base model is one this service offers, and a
``forward_backward`` batch has the inputs its loss needs, in the right lengths (grpo_core.training_api.spec). So a bad
call is refused with the SDK's own exception for its status, and the worker never sees it.

Ordering: each request takes the session's next ``seq`` in the same guarded UPDATE that checks the session is
active, and the worker takes pending requests in ``seq`` order; the SDK submits a training client's calls one
after another (docs/architecture/tinker-protocol.md §3), so they run in the order the user made them.

The doorbell: the first request of a session no worker holds rings the queue (after the commit); the reaper rings
again when no worker took it (api.training_api.leases.reap).
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.checkpoints import service as checkpoints
from api.core.errors import InvalidRequest, NotFound
from api.core.queue import Doorbell
from api.core.settings import ApiSettings
from api.core.wakeups import session_key
from api.db.models import (
    SamplingSession,
    TrainingCheckpoint,
    TrainingRequest,
    TrainingRequestStatus,
    TrainingRun,
    TrainingSession,
    TrainingSessionStatus,
    new_id,
    now,
)
from api.db.session import rows_changed
from api.models.service import available, find, source_of
from api.training_api.paths import TinkerPath, checked_name, object_key, run_id, sampler_id
from api.training_api.schemas import LoadWeights as LoadWeightsIn
from api.usage import budgets
from runtime import training_api as tc

log = logging.getLogger(__name__)
MAX_RUNS_PER_SESSION = 4  # models one session keeps resident on its worker (each with its optimizer and sampler)

_NOT_ACTIVE = {
    TrainingSessionStatus.finished: "was closed by its client",
    TrainingSessionStatus.expired: "expired: no request reached it for the idle timeout, so its worker freed the "
    "device and its models' unsaved state is gone",
    TrainingSessionStatus.lost: "lost its worker",
}


def create_session(
    db: Session, project_id: str, tags: list[str], user_metadata: dict[str, Any] | None, sdk_version: str | None
) -> TrainingSession:
    row = TrainingSession(
        id=new_id("sess"),
        project_id=project_id,
        status=TrainingSessionStatus.active,
        tags=tags,
        user_metadata=user_metadata,
        sdk_version=sdk_version,
        next_seq=0,
        heartbeat_at=now(),
    )
    db.add(row)
    db.commit()
    return row


def get_session(db: Session, project_id: str, session_id: str) -> TrainingSession:
    row = db.get(TrainingSession, session_id)
    if row is None or row.project_id != project_id:
        raise NotFound(f"no session {session_id!r}", param="session_id")
    return row


def active_session(db: Session, project_id: str, session_id: str) -> TrainingSession:
    """The session, or 404 (not this project's) / 400 (no longer active, saying why and what to do)."""
    row = get_session(db, project_id, session_id)
    if row.status != TrainingSessionStatus.active:
        why = (row.error or {}).get("message") or _NOT_ACTIVE.get(TrainingSessionStatus(row.status), row.status)
        raise InvalidRequest(
            f"session {session_id} is {row.status}: it {why}. Start a new ServiceClient, and restore a training "
            "client from your last save_state with create_training_client_from_state.",
            param="session_id",
            code=f"session_{row.status}",
        )
    return row


def heartbeat(db: Session, project_id: str, session_id: str) -> TrainingSession:
    """The session, its client's heartbeat recorded while it is active (the caller answers one that is not)."""
    row = get_session(db, project_id, session_id)
    if row.status == TrainingSessionStatus.active:
        row.heartbeat_at = now()
        db.commit()
    return row


def finish_session(db: Session, project_id: str, session_id: str, reason: str | None) -> TrainingSession:
    """Close the session: its worker hands the device back at its next call, and what is still pending fails."""
    row = get_session(db, project_id, session_id)
    if row.status == TrainingSessionStatus.active:
        t = now()
        db.execute(
            update(TrainingSession)
            .where(TrainingSession.id == session_id, TrainingSession.status == TrainingSessionStatus.active)
            .values(status=TrainingSessionStatus.finished, finished_at=t, error={"reason": reason} if reason else None)
        )
        fail_open_requests(db, session_id, "the session was closed by its client before this request ran", "user")
        db.commit()
    return row


def fail_open_requests(db: Session, session_id: str, message: str, category: str) -> int:
    """Fail every pending or running request of the session (their futures answer with this error)."""
    res = db.execute(
        update(TrainingRequest)
        .where(
            TrainingRequest.session_id == session_id,
            TrainingRequest.status.in_([TrainingRequestStatus.pending, TrainingRequestStatus.running]),
        )
        .values(
            status=TrainingRequestStatus.failed,
            error={"message": message, "category": category},
            finished_at=now(),
        )
    )
    return int(getattr(res, "rowcount", 0) or 0)


def model_spec(db: Session, settings: ApiSettings, base_model: str, param: str = "base_model") -> tc.ModelSpec:
    """A base model this service offers, as the worker loads it; 400 naming the ones it offers otherwise."""
    entry = find(db, settings, base_model)
    if entry is None:
        known = ", ".join(available(db, settings)) or "none"
        raise InvalidRequest(
            f"base model {base_model!r} is not registered on this service (available: {known})",
            param=param,
            code="model_not_found",
        )
    return tc.ModelSpec(id=base_model, source=source_of(entry.row) if entry.row is not None else None)


def enqueue(
    db: Session,
    queue: Doorbell,
    settings: ApiSettings,
    session: TrainingSession,
    target: str | None,
    request: tc.Request,
    *,
    client_seq: int | None = None,
    ring: bool = True,
) -> TrainingRequest:
    """Add ``request`` on ``target`` (a training run or sampling client) at the session's next seq (refused if the
    session stopped being active meanwhile), commit, and ring the doorbell when no worker holds the session and
    none was rung lately.

    ``client_seq``: the SDK's number of the call (its ``seq_id``). The SDK retries a POST whose answer it lost;
    the retry gets the first request's future back instead of a second request (a gradient added twice, two
    steps), also when the two race (the unique constraint on (target, client_seq) decides).

    402 ``budget_exceeded`` while the project is over its monthly budget (api.usage.budgets): the SDK raises its
    ``BillingError``; a retry of a call taken before still gets its future."""
    if client_seq is not None:
        first = _by_client_seq(db, target, client_seq)
        if first is not None:
            return first
    budgets.check_project(db, settings, session.project_id, "training-API calls")
    seq = db.execute(
        update(TrainingSession)
        .where(TrainingSession.id == session.id, TrainingSession.status == TrainingSessionStatus.active)
        .values(next_seq=TrainingSession.next_seq + 1)
        .returning(TrainingSession.next_seq)
    ).scalar_one_or_none()
    if seq is None:
        db.rollback()
        active_session(db, session.project_id, session.id)  # raises, saying why
        raise AssertionError("unreachable")
    session.heartbeat_at = now()  # a request is a sign of life as good as a heartbeat
    row = TrainingRequest(
        id=new_id("req"),
        session_id=session.id,
        project_id=session.project_id,
        seq=seq,
        client_seq=client_seq,
        kind=request.kind,
        target=target,
        payload=request.model_dump(mode="json", exclude={"kind"}),  # the kind has its own column
        status=TrainingRequestStatus.pending,
    )
    db.add(row)
    t = now()
    stale = t - settings.requeue_after_seconds
    rung = ring and (
        rows_changed(
            db,
            update(TrainingSession)
            .where(
                TrainingSession.id == session.id,
                TrainingSession.claim_id.is_(None),
                (TrainingSession.enqueued_at.is_(None)) | (TrainingSession.enqueued_at < stale),
            )
            .values(enqueued_at=t),
        )
        == 1
    )
    try:
        db.commit()
    except IntegrityError:  # the same call's retry committed first
        db.rollback()
        first = _by_client_seq(db, target, client_seq) if client_seq is not None else None
        if first is None:
            raise
        return first
    queue.wake(session_key(session.id))  # its worker, waiting in this process for the next request
    if rung:
        try:
            queue.ring_session(session.id)
        except Exception:  # the broker is down: enqueued_at is set, so the reaper rings again after requeue_after
            log.exception("could not ring the queue for session %s", session.id)
    return row


def stored_request(row: TrainingRequest) -> tc.Request:
    """The typed request a row holds (``enqueue`` stored its payload beside its kind). A forward_backward's or a
    sample's payload is emptied once its worker has read it (api.training_api.leases.post_result): those rows are
    read by their kind alone."""
    return tc.parse_request({**row.payload, "kind": row.kind})


def replay(db: Session, target: str, client_seq: int | None) -> TrainingRequest | None:
    """The request a call numbered ``client_seq`` on ``target`` (already the caller's) made before: the SDK
    retrying a POST whose answer it lost gets that future back, even once the request is done."""
    return _by_client_seq(db, target, client_seq) if client_seq is not None else None


def _by_client_seq(db: Session, target: str | None, client_seq: int) -> TrainingRequest | None:
    return db.scalars(
        select(TrainingRequest).where(TrainingRequest.target == target, TrainingRequest.client_seq == client_seq)
    ).first()


# Training runs
def create_run(
    db: Session,
    queue: Doorbell,
    settings: ApiSettings,
    project_id: str,
    session_id: str,
    seq: int,
    base_model: str,
    lora: dict[str, Any],
    user_metadata: dict[str, Any] | None,
) -> TrainingRequest:
    session = active_session(db, project_id, session_id)
    rid = run_id(session_id, seq)
    existing = db.get(TrainingRun, rid)
    if existing is not None:  # the SDK's retry of the same create: the same future
        first = db.scalars(
            select(TrainingRequest).where(TrainingRequest.target == rid).order_by(TrainingRequest.seq).limit(1)
        ).first()
        if first is not None:
            return first
    spec = model_spec(db, settings, base_model)
    held = db.scalar(select(func.count()).select_from(TrainingRun).where(TrainingRun.session_id == session_id))
    if (held or 0) >= MAX_RUNS_PER_SESSION:
        raise InvalidRequest(
            f"a session holds at most {MAX_RUNS_PER_SESSION} training clients (each a model resident on its "
            "worker): use another ServiceClient",
            param="model_seq_id",
        )
    rank = int(lora.get("rank", 32))
    if not 1 <= rank <= 256:
        raise InvalidRequest(f"LoRA rank {rank} is outside 1..256", param="lora_config.rank")
    if not (lora.get("train_mlp", True) or lora.get("train_attn", True)):
        raise InvalidRequest("train_mlp and train_attn are both off: nothing to train", param="lora_config")
    seed = lora.get("seed")
    create = tc.CreateModel(
        base=spec,
        rank=rank,
        seed=int(seed) if seed is not None else 0,
        train_mlp=bool(lora.get("train_mlp", True)),
        train_attn=bool(lora.get("train_attn", True)),
        exact=pool_exact(user_metadata),
    )
    db.add(
        TrainingRun(
            id=rid,
            session_id=session_id,
            project_id=project_id,
            base_model=base_model,
            lora={
                **create.model_dump(exclude={"base", "exact"}),
                "train_unembed": bool(lora.get("train_unembed", True)),
            },
            user_metadata=user_metadata,
        )
    )
    return enqueue(db, queue, settings, session, rid, create)


def pool_exact(user_metadata: dict[str, Any] | None) -> bool:
    """Whether a new training run asks to compute alone on a pooled worker, bit for bit as on one of its own
    (``user_metadata["pool_exact"]``: the ``tinker`` SDK's ``create_lora_training_client`` takes string metadata)."""
    value = (user_metadata or {}).get("pool_exact")
    text = str(value).strip().lower() if value is not None else "false"
    if text not in ("true", "false", "1", "0"):
        raise InvalidRequest(f'pool_exact is {value!r}: say "true" or "false"', param="user_metadata.pool_exact")
    return text in ("true", "1")


def get_run(db: Session, project_id: str, rid: str) -> TrainingRun:
    row = db.get(TrainingRun, rid)
    if row is None or row.project_id != project_id:
        raise NotFound(f"no training run {rid!r}", param="model_id")
    return row


def active_run(db: Session, project_id: str, rid: str) -> tuple[TrainingSession, TrainingRun]:
    run = get_run(db, project_id, rid)
    session = active_session(db, project_id, run.session_id)
    run.last_request_at = now()
    return session, run


def run_request(
    db: Session,
    queue: Doorbell,
    settings: ApiSettings,
    project_id: str,
    rid: str,
    request: tc.Request,
    client_seq: int | None = None,
) -> TrainingRequest:
    """``request`` on training run ``rid`` of the caller's project, in its active session."""
    session, _ = active_run(db, project_id, rid)
    return enqueue(db, queue, settings, session, rid, request, client_seq=client_seq)


def checkpoint_target(
    db: Session, project_id: str, rid: str, kind: str, name: str | None, overwrite: bool, param: str = "path"
) -> tc.CheckpointTarget:
    """Where a named save goes; 400 when the name is taken and ``overwrite`` is off."""
    path = TinkerPath(rid, "training" if kind == "training" else "sampler", checked_name(name, param))
    taken = checkpoints.at_path(db, str(path))
    if taken is not None and not overwrite:
        raise InvalidRequest(f"{path} exists: pick another name (save_state can overwrite=True)", param=param)
    cid = taken.id if taken is not None else new_id("ftckpt")
    return tc.CheckpointTarget(checkpoint_id=cid, object_key=object_key(project_id, path), tinker_path=str(path))


def find_checkpoint(
    db: Session, project_id: str, path: str, kind: str | None = None, param: str = "path"
) -> TrainingCheckpoint:
    """The project's checkpoint at ``tinker://`` ``path`` (404 otherwise, as for one that never existed), of
    ``kind`` when given (a 400 naming the kind the call needs)."""
    row = checkpoints.at_path(db, str(TinkerPath.parse(path, param)))
    if row is None or row.project_id != project_id:
        raise NotFound(f"no checkpoint {path}", param=param)
    if kind is not None and row.kind != kind:
        want = (
            "a save_state checkpoint (…/weights/…)"
            if kind == "training"
            else "a sampler checkpoint (…/sampler_weights/…)"
        )
        raise InvalidRequest(f"{path} is a {row.kind} checkpoint; this call needs {want}", param=param)
    return row


def load_weights(
    db: Session, queue: Doorbell, settings: ApiSettings, project_id: str, body: LoadWeightsIn
) -> TrainingRequest:
    """``load_state`` (into an existing run) or ``create_training_client_from_state`` (a new run, its LoRA shape
    taken from the checkpoint's run)."""
    ckpt = find_checkpoint(db, project_id, body.path, "training")
    if body.model_id:
        request = tc.LoadWeights(object_key=ckpt.object_key, optimizer=body.optimizer)
        return run_request(db, queue, settings, project_id, body.model_id, request, client_seq=body.seq_id)
    if body.session_id is None or body.model_seq_id is None:
        raise InvalidRequest("load_weights needs model_id, or session_id and model_seq_id", param="model_id")
    session = active_session(db, project_id, body.session_id)
    source = get_run(db, project_id, ckpt.run_id)
    rid = run_id(session.id, body.model_seq_id)
    lora = dict(source.lora)
    create = tc.CreateModel(
        base=model_spec(db, settings, source.base_model),
        rank=int(lora["rank"]),
        seed=int(lora.get("seed", 0)),
        train_mlp=bool(lora.get("train_mlp", True)),
        train_attn=bool(lora.get("train_attn", True)),
        exact=pool_exact(body.user_metadata),
    )
    if db.get(TrainingRun, rid) is None:
        db.add(
            TrainingRun(
                id=rid,
                session_id=session.id,
                project_id=project_id,
                base_model=source.base_model,
                lora=lora,
                user_metadata=body.user_metadata,
            )
        )
    request = tc.LoadWeights(object_key=ckpt.object_key, optimizer=body.optimizer, create=create)
    return enqueue(db, queue, settings, session, rid, request)


# Sampling clients
def create_sampler(
    db: Session,
    settings: ApiSettings,
    project_id: str,
    session_id: str,
    seq: int,
    base_model: str | None,
    model_path: str | None,
) -> SamplingSession:
    session = active_session(db, project_id, session_id)
    sid = sampler_id(session.id, seq)
    existing = db.get(SamplingSession, sid)
    if existing is not None:
        return existing
    checkpoint_id = None
    if model_path:
        ckpt = find_checkpoint(db, project_id, model_path, "sampler", "model_path")
        base_model = get_run(db, project_id, ckpt.run_id).base_model
        checkpoint_id = ckpt.id
    if not base_model:
        raise InvalidRequest("a sampling client needs base_model or model_path", param="base_model")
    model_spec(db, settings, base_model)
    row = SamplingSession(
        id=sid, session_id=session.id, project_id=project_id, base_model=base_model, checkpoint_id=checkpoint_id
    )
    db.add(row)
    db.commit()
    return row


def snapshot_sampler_id(db: Session, run: TrainingRun, seq: int) -> str:
    """The id the unnamed save of ``run``'s weights answers with: a sampling client of the run's session, created
    when the worker has kept the weights (api.training_api.leases.post_result)."""
    sid = sampler_id(run.session_id, seq)
    if db.get(SamplingSession, sid) is not None:
        raise InvalidRequest(f"sampling session {sid} exists", param="sampling_session_seq_id")
    return sid


def get_sampler(db: Session, project_id: str, sid: str) -> SamplingSession:
    row = db.get(SamplingSession, sid)
    if row is None or row.project_id != project_id:
        raise NotFound(f"no sampling session {sid!r}", param="sampling_session_id")
    return row


def sampler_spec(db: Session, settings: ApiSettings, row: SamplingSession) -> tc.SamplerSpec:
    ckpt = db.get(TrainingCheckpoint, row.checkpoint_id) if row.checkpoint_id else None
    if row.checkpoint_id and ckpt is None:  # never the base model in its place
        raise NotFound(f"the sampler checkpoint of sampling client {row.id} was deleted", param="sampling_session_id")
    return tc.SamplerSpec(
        id=row.id,
        base=model_spec(db, settings, row.base_model),
        adapter_key=ckpt.object_key if ckpt is not None else None,
        snapshot_of=row.snapshot_of,
    )


def model_path_of(db: Session, row: SamplingSession) -> str | None:
    if row.checkpoint_id is None:
        return None
    ckpt = db.get(TrainingCheckpoint, row.checkpoint_id)
    return ckpt.tinker_path if ckpt is not None else None
