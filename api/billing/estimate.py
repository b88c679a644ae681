"""What a job will take and cost, before it runs (no FastAPI): ``POST /v1/fine_tuning/jobs/estimate``.

The model is the job's shape times rates measured on the device kind a worker would give it:

    device_seconds = devices × (attempts × setup + steps × step + eval_prompts × s_eval)
    step = max_completion_tokens × (s_decode + rows × s_row) + rows × (s_update + max_completion_tokens × s_token)
           + grader_calls_per_step × s_grader + overhead

Sampling decodes every row of a step together until the longest completion ends (about max_completion_tokens
steps), each decode step costing a fixed part (the weights read once) and a part per row: on a CPU the second
dominates, on a GPU the first, and a per-token rate alone would be off by the ratio of two jobs' group sizes. The
update runs every row padded to the longest completion, the prompt included: a part per row and a part per row and
completion token, not the completion tokens alone.
The shape comes from the body as the job would run (api.jobs.service.plan_job: the caps applied, the steps the
training file gives): prompts per step, completions per prompt, grader columns, validation runs × prompts, and the
expected completion length, ``max_completion_tokens`` × the share of theirs that earlier jobs of the model used.

The rates are calibrated from the usage records (the one meter) of the finished jobs of this base model on this device
kind (at most ``HISTORY`` of the newest, each summed over its attempts; pooled attempts left out, their seconds are
shared): s_decode and s_row by least squares over the jobs' sampling_seconds / (steps × max_completion_tokens) against
their rows (one group size only: all of it per row); s_update and s_token likewise over training_seconds / (steps ×
rows) against max_completion_tokens; seconds per grader call = Σ grader_seconds / Σ grader_calls, and so per
validation prompt; what the records hold beyond those phases (loading, checkpoints, the
host's own work) is fitted as ``setup`` per attempt + ``overhead`` per step by least squares (both only where the
jobs' steps per attempt differ by 2× or more; else all of it per attempt). Each fit is weighted, a job's weight
halving every 4 jobs back: a worker's first job pays for cold caches its later ones do not, and the newest jobs
describe the fleet as it is. The range is the worst
relative error of that calibration predicting each of its own jobs from the others (leave-one-out, 3 jobs or more; ±25 %
with fewer). With no job of this model on this kind, the rates of other models on it are scaled by parameter count
(medium); with none at all, a stated fallback from the model's size and the device's class (low, ×½ to ×2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pydantic import TypeAdapter
from sqlalchemy import desc, func, select
from sqlalchemy.orm import Session

from api.billing.schemas import EstimateDrivers, JobEstimate, Span
from api.core.settings import ApiSettings
from api.db.models import File, Job, JobStatus, UsageKind, UsageRecord
from api.jobs.schemas import JobCreate
from api.jobs.service import plan_job
from api.models import service as model_registry
from api.usage.prices import project_prices
from grpo_core.models.files import inspect_model_folder
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.graders import GraderSpec, reward_columns
from runtime.storage import ObjectStore

_GRADER: TypeAdapter[GraderSpec] = TypeAdapter(GraderSpec)
HISTORY = 50  # finished jobs a calibration reads at most, newest first
HALF_LIFE = 4.0  # a job's weight in the calibration halves every this many jobs back: newer ones describe the fleet
LEVER = 2.0  # setup and per-step overhead are told apart only by jobs whose steps per attempt differ this much
FEW = 0.25  # the range where fewer than 3 jobs calibrate it
# The fallback with no history at all (low confidence): effective FLOP/s of one device of each class for decoding
# (memory-bound, batched) and for the update (forward + backward + the old policy's log-probs: ~8 × params a token)
FALLBACK_FLOPS = {"cpu": (6e10, 3e11), "cuda": (2e12, 1e14)}  # cpu: SmolLM2-135M's demo job on 2 AVX-512 cores
FALLBACK_SETUP = {"cpu": 30.0, "cuda": 90.0}


@dataclass(frozen=True)
class Shape:
    """A job's work, known before it runs (or, for a finished job, as it was configured)."""

    steps: int
    batch: int
    group: int
    drawn: int
    max_tokens: int
    columns: int
    eval_prompts: int
    devices: int

    @classmethod
    def of(cls, cfg: GRPOConfig, steps: int, columns: int, valid_rows: int, devices: int) -> Shape:
        evals = 0
        if valid_rows:
            interval = cfg.eval_interval or 0
            evals = (steps // interval + (1 if steps % interval else 0)) if interval else 1
        return cls(
            steps=steps,
            batch=cfg.batch_size,
            group=cfg.group_size,
            drawn=cfg.gfpo_sample_size or cfg.group_size,
            max_tokens=cfg.max_completion_tokens,
            columns=columns,
            eval_prompts=evals * valid_rows,
            devices=devices,
        )


@dataclass(frozen=True)
class Rates:
    """Seconds per unit of work on one device kind, and the share of max_completion_tokens completions use."""

    decode: float  # seconds of one decode step, whatever the rows
    row: float  # seconds one more row adds to a decode step
    update: float  # seconds the update takes for one row, whatever its length
    token: float  # seconds each max_completion_token adds to a row's update
    grader: float
    eval_prompt: float
    setup: float
    per_step: float
    length: float  # mean completion tokens / max_completion_tokens

    def sampling(self, s: Shape) -> float:
        """Seconds one step samples for."""
        return s.max_tokens * (self.decode + s.batch * s.drawn * self.row)

    def training(self, s: Shape) -> float:
        """Seconds one step's update takes."""
        return s.batch * s.group * (self.update + s.max_tokens * self.token)

    def drivers(self, s: Shape) -> EstimateDrivers:
        tokens = self.length * s.max_tokens
        return EstimateDrivers(
            steps=s.steps,
            prompts_per_step=s.batch,
            samples_per_prompt=s.drawn,
            completion_tokens_per_sample=round(tokens, 2),
            sampled_tokens=round(s.steps * s.batch * s.drawn * tokens),
            trained_tokens=round(s.steps * s.batch * s.group * tokens),
            grader_calls=s.steps * s.batch * s.drawn * s.columns,
            evals=s.eval_prompts,
            seconds_per_decode_step=self.decode,
            seconds_per_decode_row=self.row,
            seconds_per_sampled_token=_ratio(self.sampling(s), s.batch * s.drawn * tokens),
            seconds_per_update_row=self.update,
            seconds_per_update_row_token=self.token,
            seconds_per_trained_token=_ratio(self.training(s), s.batch * s.group * tokens),
            seconds_per_grader_call=self.grader,
            seconds_per_eval_prompt=self.eval_prompt,
            setup_seconds=round(self.setup, 3),
            overhead_seconds_per_step=round(self.per_step, 4),
            devices=s.devices,
        )

    def step_seconds(self, s: Shape) -> float:
        return self.sampling(s) + self.training(s) + s.batch * s.drawn * s.columns * self.grader + self.per_step

    def device_seconds(self, s: Shape, attempts: int = 1) -> float:
        return s.devices * (attempts * self.setup + s.steps * self.step_seconds(s) + s.eval_prompts * self.eval_prompt)

    def scaled(self, factor: float) -> Rates:
        """Another model's rates on the same device: work and loading scale with its parameters."""
        return replace(
            self,
            decode=self.decode * factor,
            row=self.row * factor,
            update=self.update * factor,
            token=self.token * factor,
            eval_prompt=self.eval_prompt * factor,
            setup=self.setup * factor,
        )


@dataclass(frozen=True)
class Observed:
    """A finished job, summed over its attempts, as its usage records counted it."""

    model: str
    shape: Shape
    device_seconds: float  # per device
    attempts: int
    steps: int
    sampled_tokens: int
    trained_tokens: int
    grader_calls: int
    sampling_seconds: float
    training_seconds: float
    grader_seconds: float
    eval_seconds: float

    @property
    def phases(self) -> float:
        return self.sampling_seconds + self.training_seconds + self.grader_seconds + self.eval_seconds


def history(session: Session, model: str | None, kind: str) -> list[Observed]:
    """The newest finished jobs (of ``model``; None: any) with their records on ``kind``, not pooled."""
    r = UsageRecord
    sums = (
        select(
            r.job_id,
            func.sum(r.device_seconds / r.devices),
            func.count(),
            func.sum(r.steps),
            func.sum(r.sampled_tokens),
            func.sum(r.trained_tokens),
            func.sum(r.grader_calls),
            func.sum(r.sampling_seconds),
            func.sum(r.training_seconds),
            func.sum(r.grader_seconds),
            func.sum(r.eval_seconds),
            func.max(r.last_seen_at).label("last"),
        )
        .join(Job, Job.id == r.job_id)
        .where(r.kind == UsageKind.job, r.device_kind == kind, r.shared.is_(False), r.devices > 0)
        .where(Job.status == JobStatus.succeeded, r.steps > 0)
        .group_by(r.job_id)
        .order_by(desc("last"))
        .limit(HISTORY)
    )
    if model is not None:
        sums = sums.where(Job.model == model)
    rows = session.execute(sums).all()
    jobs = {j.id: j for j in session.scalars(select(Job).where(Job.id.in_([row[0] for row in rows])))}
    valid = dict(
        session.execute(
            select(File.id, File.row_count).where(File.id.in_([j.validation_file for j in jobs.values()]))
        ).all()
    )
    out = []
    for job_id, seconds, attempts, steps, sampled, trained, calls, s_s, t_s, g_s, e_s, _ in rows:
        job = jobs[str(job_id)]
        cfg = GRPOConfig.model_validate(job.reinforcement.hyperparameters)
        rows_valid = int(valid.get(job.validation_file or "") or 0)
        shape = Shape.of(cfg, job.total_steps, len(reward_columns_of(job)), rows_valid, 1)
        counts = (int(attempts), int(steps), int(sampled), int(trained), int(calls))
        phases = (float(s_s), float(t_s), float(g_s), float(e_s))
        out.append(Observed(job.model, shape, float(seconds), *counts, *phases))
    return out


def reward_columns_of(job: Job) -> list[str]:
    return reward_columns(_GRADER.validate_python(job.reinforcement.grader))


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 0.0


def calibrate(jobs: Sequence[Observed]) -> Rates:
    """The rates of ``jobs``, newest first (module doc): each a weighted least squares or ratio, a job's weight
    halving every ``HALF_LIFE`` jobs back."""
    w = [0.5 ** (i / HALF_LIFE) for i in range(len(jobs))]

    def total(values: Sequence[float]) -> float:
        return sum(wi * v for wi, v in zip(w, values, strict=True))

    length = _ratio(
        total([o.trained_tokens for o in jobs]),
        total([o.steps * o.shape.batch * o.shape.group * o.shape.max_tokens for o in jobs]),
    )
    rest = [(float(o.attempts), float(o.steps), max(o.device_seconds - o.phases, 0.0)) for o in jobs]
    setup, per_step = _fit(rest, w, lever=LEVER)
    decode_steps = [(o.steps * o.shape.max_tokens, o.shape.batch * o.shape.drawn, o.sampling_seconds) for o in jobs]
    decode, row = _fit([(float(n), float(n * rows), y) for n, rows, y in decode_steps], w, prefer_second=True)
    rows_trained = [(o.steps * o.shape.batch * o.shape.group, o.shape.max_tokens, o.training_seconds) for o in jobs]
    update, token = _fit([(float(n), float(n * t), y) for n, t, y in rows_trained], w)
    evals = total([o.shape.eval_prompts * o.steps / max(o.shape.steps, 1) for o in jobs])
    return Rates(
        decode=decode,
        row=row,
        update=update,
        token=token,
        grader=_ratio(total([o.grader_seconds for o in jobs]), total([o.grader_calls for o in jobs])),
        eval_prompt=_ratio(total([o.eval_seconds for o in jobs]), evals),
        setup=setup,
        per_step=per_step,
        length=length or 1.0,
    )


def _fit(
    points: Sequence[tuple[float, float, float]],
    weights: Sequence[float] | None = None,
    *,
    prefer_second: bool = False,
    lever: float = 1.0,
) -> tuple[float, float]:
    """Weighted least squares of y = a·x1 + b·x2 with a, b ≥ 0 (e.g. x1: attempts, x2: steps, y: seconds beyond
    the phases). Both are fitted only where the points' x2/x1 span a factor of ``lever`` or more (a weaker lever
    hands noise from one to the other); otherwise, or where the solution is not physical, all of it goes to the
    one that fits better (a tie: to a, or to b when ``prefer_second``)."""
    w = list(weights) if weights is not None else [1.0] * len(points)
    s11 = sum(wi * x1 * x1 for wi, (x1, _, _) in zip(w, points, strict=True))
    s12 = sum(wi * x1 * x2 for wi, (x1, x2, _) in zip(w, points, strict=True))
    s22 = sum(wi * x2 * x2 for wi, (_, x2, _) in zip(w, points, strict=True))
    s1y = sum(wi * x1 * y for wi, (x1, _, y) in zip(w, points, strict=True))
    s2y = sum(wi * x2 * y for wi, (_, x2, y) in zip(w, points, strict=True))
    ratios = [x2 / x1 for x1, x2, _ in points if x1 > 0]
    spans = bool(ratios) and min(ratios) > 0 and max(ratios) / min(ratios) >= lever
    det = s11 * s22 - s12 * s12
    if spans and det > 1e-9 * max(s11 * s22, 1.0):
        a, b = (s1y * s22 - s2y * s12) / det, (s2y * s11 - s1y * s12) / det
        if a >= 0 and b >= 0:
            return a, b
    a_only, b_only = _ratio(s1y, s11), _ratio(s2y, s22)
    err_a = sum(wi * (y - a_only * x1) ** 2 for wi, (x1, _, y) in zip(w, points, strict=True))
    err_b = sum(wi * (y - b_only * x2) ** 2 for wi, (_, x2, y) in zip(w, points, strict=True))
    if not spans and not prefer_second:
        return a_only, 0.0  # no lever: the per-attempt reading (a job's setup) is the physical one
    first = err_a < err_b or (err_a == err_b and not prefer_second)
    return (a_only, 0.0) if first else (0.0, b_only)


def spread(jobs: Sequence[Observed]) -> float:
    """The worst relative error of predicting each job from the others (3 jobs or more), else ``FEW``."""
    if len(jobs) < 3:
        return FEW
    worst = 0.0
    for i, o in enumerate(jobs):
        rates = calibrate([p for j, p in enumerate(jobs) if j != i])
        predicted = rates.device_seconds(o.shape, o.attempts)
        worst = max(worst, abs(predicted - o.device_seconds) / max(o.device_seconds, 1e-9))
    return max(worst, 0.05)


def fallback(params: int, kind: str) -> Rates:
    """No history on this device kind: the stated rates of a model of ``params`` parameters (module doc)."""
    cls = "cpu" if kind.startswith("cpu") or kind == "unknown" else "cuda"
    decode, update = FALLBACK_FLOPS[cls]
    return Rates(
        decode=0.0,
        row=2 * params / decode,
        update=0.0,
        token=8 * params / update,
        grader=0.001,
        eval_prompt=2 * params * 64 / decode,
        setup=FALLBACK_SETUP[cls],
        per_step=0.5,
        length=0.6,
    )


def parameters(session: Session, settings: ApiSettings, model: str) -> int:
    """The base model's parameter count (the registry's, or its catalog folder's config), or 0 when unknown."""
    entry = model_registry.find(session, settings, model)
    if entry is not None and entry.row is not None and entry.row.parameter_count:
        return int(entry.row.parameter_count)
    if entry is not None and entry.catalog_dir is not None:
        return int(inspect_model_folder(entry.catalog_dir).parameter_count or 0)
    return 0


def device_kind_for(session: Session, model: str) -> str:
    """The device kind a worker would give a job of ``model``: the last one a job of it ran on, else the last one
    any job ran on; 'unknown' on a service that never ran a job."""
    r = UsageRecord
    newest = select(r.device_kind).where(r.kind == UsageKind.job, r.device_kind.is_not(None))
    newest = newest.order_by(r.started_at.desc()).limit(1)
    mine = newest.join(Job, Job.id == r.job_id).where(Job.model == model)
    return session.scalar(mine) or session.scalar(newest) or "unknown"


def calibration(session: Session, settings: ApiSettings, model: str, kind: str) -> tuple[Rates, str, str, float]:
    """The rates for ``model`` on ``kind``, with the confidence, the basis in words and the range's half-width."""
    own = history(session, model, kind)
    if own:
        wide = spread(own)
        sure = "high" if len(own) >= 3 else "medium"
        how = f"leave-one-out error up to {wide:.0%}" if len(own) >= 3 else f"fewer than 3 jobs: ±{FEW:.0%}"
        return calibrate(own), sure, f"calibrated from {len(own)} finished job(s) of {model} on {kind} ({how})", wide
    params = parameters(session, settings, model)
    others = history(session, None, kind)
    if others and params:
        by_model: dict[str, int] = {}
        for o in others:  # each job's model's size, for the scale
            by_model.setdefault(o.model, parameters(session, settings, o.model))
        sizes = [by_model[o.model] for o in others if by_model[o.model]]
        if sizes:
            factor = params / (sum(sizes) / len(sizes))
            basis = f"no finished job of {model} on {kind}: {len(others)} job(s) of other models there, scaled by size"
            return calibrate(others).scaled(factor), "medium", basis, 0.5
    basis = f"no finished job on {kind}: a fallback from the model's size ({params / 1e9:.2g} B parameters)"
    return fallback(params or 500_000_000, kind), "low", basis, 1.0


def estimate(
    session: Session,
    store: ObjectStore,
    settings: ApiSettings,
    project_id: str,
    body: JobCreate,
    device_kind: str | None = None,
) -> JobEstimate:
    """What ``body`` would take and cost as a job of ``project_id`` (validated as a create is: the same 4xx)."""
    plan = plan_job(session, store, settings, project_id, body)
    valid = 0
    if body.validation_file is not None:
        valid = int(session.scalar(select(File.row_count).where(File.id == body.validation_file)) or 0)
    devices = body.resources.devices * body.resources.nodes
    columns = len(reward_columns(body.method.reinforcement.grader))
    shape = Shape.of(plan.cfg, plan.cfg.total_steps(plan.train.row_count), columns, valid, devices)
    kind = device_kind or device_kind_for(session, body.model)
    rates, confidence, basis, wide = calibration(session, settings, body.model, kind)
    seconds = rates.device_seconds(shape)
    low, high = (seconds / 2, seconds * 2) if confidence == "low" else (seconds * (1 - wide), seconds * (1 + wide))
    prices = project_prices(session, settings, project_id)
    costs = [prices.cost({kind: x}).amount for x in (seconds, low, high)]
    step = rates.step_seconds(shape)
    return JobEstimate(
        model=body.model,
        device_kind=kind,
        step_seconds=Span(
            expected=round(step, 3), low=round(step * low / seconds, 3), high=round(step * high / seconds, 3)
        ),
        device_seconds=Span(expected=round(seconds, 1), low=round(low, 1), high=round(high, 1)),
        device_hours=Span(expected=round(seconds / 3600, 6), low=round(low / 3600, 6), high=round(high / 3600, 6)),
        cost=Span(expected=costs[0], low=costs[1], high=costs[2]),
        unit=prices.unit,
        confidence=confidence,
        basis=basis,
        drivers=rates.drivers(shape),
    )
