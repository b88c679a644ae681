"""``rft jobs follow``: a job's progress live — step/total, train reward and its sparkline, ETA — until it ends.

It polls the job and its events (a metrics event's ``data`` is the typed StepMetrics of openapi.json: step,
total_steps, scores, timing), so it works on any deployment, behind any proxy, and can attach to a job at any
point: the first poll backfills the history. On a terminal it draws a rich progress bar; in a log (no TTY) it
prints one line per step instead.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from rft_client.api.fine_tuning import retrieve_job
from rft_client.models import Job, JobError, JobEvent, StepMetrics
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from rft_cli.api import CliError, Config, fetch, iter_events
from rft_cli.render import cost_text

TERMINAL = {"succeeded", "failed", "cancelled"}
SPARK = "▁▂▃▄▅▆▇█"
LEVEL_STYLE = {"info": "dim", "warn": "yellow", "error": "red"}


def sparkline(values: Sequence[float | None], width: int = 24) -> str:
    """The last ``width`` values as block characters. Scaled to [0, 1] stretched to the data, so typical rewards
    keep a fixed scale (a flat 0.5 reads as half height) while other ranges still fit; a missing value is a gap."""
    tail = list(values)[-width:]
    finite = [v for v in tail if v is not None and math.isfinite(v)]
    if not finite:
        return ""
    lo, hi = min(min(finite), 0.0), max(max(finite), 1.0)
    span = hi - lo or 1.0
    out = []
    for v in tail:
        if v is None or not math.isfinite(v):
            out.append(" ")
        else:
            out.append(SPARK[min(len(SPARK) - 1, int((v - lo) / span * len(SPARK)))])
    return "".join(out)


def format_duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "-:--"
    s = max(0, round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def eta_seconds(durations: Sequence[float], remaining: int, window: int = 5) -> float | None:
    """Remaining steps × the mean of the last ``window`` step durations (recent steps predict best: the first
    ones include model loading and warm-up)."""
    recent = [d for d in durations[-window:] if d > 0]
    if remaining <= 0:
        return 0.0
    return sum(recent) / len(recent) * remaining if recent else None


@dataclass
class FollowState:
    """What the events told so far."""

    total: int = 0
    step: int = 0
    rewards: list[float | None] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)
    valid_reward: float | None = None
    seen: set[str] = field(default_factory=set)

    def add_metrics(self, ev: JobEvent) -> None:
        data = ev.data
        if not isinstance(data, StepMetrics) or data.step <= self.step:  # a resumed attempt re-reports nothing
            return
        self.step = data.step
        self.total = data.total_steps or self.total
        self.rewards.append(data.scores.train_reward_mean)
        if isinstance(data.scores.valid_reward_mean, float):
            self.valid_reward = data.scores.valid_reward_mean
        self.durations.append(data.timing.step.full_iteration)

    @property
    def reward(self) -> float | None:
        return next((r for r in reversed(self.rewards) if r is not None), None)

    def eta(self, status: str) -> str:
        if status in ("paused", "pausing", "queued"):
            return status
        return format_duration(eta_seconds(self.durations, self.total - self.step))


def new_events(config: Config, job_id: str, seen: set[str]) -> list[JobEvent]:
    """Events not shown yet, oldest first (pages newest-first until it meets one already seen)."""
    fresh = []
    for ev in iter_events(config, job_id):
        if ev.id in seen:
            break
        fresh.append(ev)
    for ev in fresh:
        seen.add(ev.id)
    return fresh[::-1]


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def step_line(state: FollowState, status: str) -> str:
    """The plain-text progress line for logs."""
    return (
        f"step {state.step}/{state.total}  train reward {_fmt(state.reward)}  {sparkline(state.rewards)}"
        + (f"  valid {_fmt(state.valid_reward)}" if state.valid_reward is not None else "")
        + f"  ETA {state.eta(status)}"
    )


def follow_job(
    config: Config, job_id: str, console: Console, err: Console, interval: float = 2.0, timeout: float | None = None
) -> int:
    """Follow until the job ends or pauses; returns the exit code (0 succeeded, 1 failed, cancelled or paused, the
    reason on ``err``)."""
    state = FollowState()
    job = _retrieve(config, job_id)
    state.total = job.total_steps
    deadline = time.monotonic() + timeout if timeout else None
    live = console.is_terminal
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("reward [cyan]{task.fields[reward]}[/] {task.fields[spark]}"),
        TextColumn("ETA {task.fields[eta]}"),
        TimeElapsedColumn(),
        console=console,
        disable=not live,
        transient=False,
    )
    task = progress.add_task(job_id, total=state.total or None, reward="-", spark="", eta="-:--")
    try:
        with progress:
            while True:
                job = _retrieve(config, job_id)  # status first: once terminal, the events below are all
                status = str(job.status)
                for ev in new_events(config, job_id, state.seen):
                    if ev.type_ == "metrics":
                        state.add_metrics(ev)
                        if not live:
                            console.print(step_line(state, status), highlight=False, soft_wrap=True)
                    else:
                        style = LEVEL_STYLE.get(ev.level, "")
                        console.print(f"[{style}]\\[{ev.level}] {escape(ev.message)}[/]", soft_wrap=True)
                progress.update(
                    task,
                    total=state.total or None,
                    completed=state.step,
                    description=f"{job_id} {status}",
                    reward=_fmt(state.reward),
                    spark=sparkline(state.rewards),
                    eta=state.eta(status),
                )
                if status in TERMINAL or status == "paused":  # paused: by its budget, or by someone
                    break
                if deadline is not None and time.monotonic() > deadline:
                    raise CliError(f"still {status} after {timeout:g} s (the job keeps running)", exit_code=124)
                time.sleep(interval)
    except KeyboardInterrupt:
        raise CliError(f"stopped following; {job_id} keeps running (rft jobs cancel {job_id})", exit_code=130) from None
    return finish_message(job, state, console, err)


def _retrieve(config: Config, job_id: str) -> Job:
    return fetch(retrieve_job, config, Job, fine_tuning_job_id=job_id)


def finish_message(job: Job, state: FollowState, console: Console, err: Console) -> int:
    status = job.status
    scores = f"train reward {_fmt(state.reward)}" + (
        f", validation reward {_fmt(state.valid_reward)}" if state.valid_reward is not None else ""
    )
    cost = cost_text(job.usage.to_dict().get("cost") if job.usage else None)
    if status == "succeeded":
        console.print(
            f"[green]job {job.id} succeeded[/]: {job.steps_done}/{job.total_steps} steps, {scores}, cost {cost}; "
            f"adapter: rft adapters download {job.id}",
            highlight=False,
            soft_wrap=True,
        )
        return 0
    if status == "paused":
        why = "its budget was reached; raise it (rft jobs budget) and " if job.budget_alert == "reached" else ""
        err.print(
            f"[yellow]job {job.id} paused[/] at step {job.steps_done}/{job.total_steps} ({scores}, cost {cost}): "
            f"{why}rft jobs resume {job.id} continues it",
            highlight=False,
            soft_wrap=True,
        )
        return 1
    detail = f": {job.error.code}: {job.error.message}" if isinstance(job.error, JobError) else ""
    line = f"[red]job {job.id} {status}[/]{escape(detail)} (after {state.step} steps, {scores}, cost {cost})"
    err.print(line, highlight=False, soft_wrap=True)
    return 1
