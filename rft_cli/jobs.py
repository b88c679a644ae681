"""``rft jobs``: create, list, get, cancel, pause, resume, follow a job, and look at its rollouts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rft_client.api.fine_tuning import (
    cancel_job,
    create_job,
    create_preflight,
    estimate_job,
    get_readiness,
    list_checkpoints,
    list_jobs,
    list_samples,
    pause_job,
    resume_job,
    retrieve_job,
    set_budget,
)
from rft_client.models import JobBudget, JobCreate, ListResponseCheckpoint, SamplesResponse
from rft_client.types import UNSET

from rft_cli.api import ApiError, CliError, Config, call, fetch, iter_events, parsed
from rft_cli.files import upload_file
from rft_cli.follow import follow_job
from rft_cli.jobspec import (
    build_job_body,
    dropped_keys,
    grader_from_file,
    load_mapping,
    parse_assignments,
    parse_pairs,
)
from rft_cli.render import (
    console,
    cost_text,
    err_console,
    estimate_lines,
    job_summary,
    jobs_table,
    print_json,
    readiness_lines,
    samples_table,
    when,
)

app = typer.Typer(help="Fine-tuning jobs: create, list, follow, control.", no_args_is_help=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the API's JSON instead of a table.")]
JobId = Annotated[str, typer.Argument(help="The job id (ftjob-…).")]


def _file_ref(config: Config, value: str | None, base_dir: Path | None = None) -> str | None:
    """A file id as is; an existing local path (relative to the job file's folder when it came from one) is
    uploaded first, so one command can start a job from local data."""
    if not value or value.startswith("file-"):
        return value
    path = Path(value)
    if not path.is_absolute() and base_dir is not None and (base_dir / path).is_file():
        path = base_dir / path
    if not path.is_file():
        return value  # not a local file: the API will say whether it knows this id
    f = upload_file(config, path)
    err_console.print(f"uploaded {value} -> {f['id']} ({f['row_count']} rows)", highlight=False)
    return f["id"]


@app.command("create")
def create(
    ctx: typer.Context,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Job spec (JSON or YAML): the API body or its short form.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Base model id (rft models list).")] = None,
    training_file: Annotated[str | None, typer.Option(help="File id, or a local JSONL path to upload.")] = None,
    validation_file: Annotated[str | None, typer.Option(help="File id, or a local JSONL path to upload.")] = None,
    grader: Annotated[
        Path | None, typer.Option(help="A python grader (grade(sample, item)) in a .py file, or a grader JSON/YAML.")
    ] = None,
    grader_name: Annotated[
        str | None, typer.Option(help="The grader's name in metrics (default: the .py file's name).")
    ] = None,
    recipe: Annotated[str | None, typer.Option(help="A named recipe: deepseekmath, r1_zero, dapo, dr_grpo, …")] = None,
    hp: Annotated[list[str] | None, typer.Option("--hp", help="Hyperparameter key=value (repeat; a.b=v nests)")] = None,
    seed: Annotated[int | None, typer.Option(help="Makes sampling and LoRA init repeatable.")] = None,
    suffix: Annotated[str | None, typer.Option(help="Suffix of the fine-tuned model's name.")] = None,
    metadata: Annotated[list[str] | None, typer.Option("--metadata", help="key=value (repeat).")] = None,
    devices: Annotated[
        int | None, typer.Option(min=1, help="Training processes (GPUs) per node; batch_size ≥ devices × nodes.")
    ] = None,
    nodes: Annotated[int | None, typer.Option(min=1, help="Machines the job spans (default 1).")] = None,
    rollout_devices: Annotated[
        int | None,
        typer.Option(min=0, help="Of the devices, the sampler's own (with --hp max_staleness=1: 1 of --devices 2)."),
    ] = None,
    priority: Annotated[
        int | None, typer.Option(help="Higher runs first; up to the project's max priority (0 unless an admin set it).")
    ] = None,
    preemptible: Annotated[
        bool | None,
        typer.Option(
            "--preemptible/--not-preemptible",
            help="Whether a higher-priority job may checkpoint and requeue this one (default: preemptible).",
        ),
    ] = None,
    preflight: Annotated[
        bool,
        typer.Option("--preflight", help="Probe the base model first: the RL-readiness report (rft jobs readiness)."),
    ] = False,
    preflight_only: Annotated[
        bool, typer.Option("--preflight-only", help="Only the readiness report: probe the base model, train nothing.")
    ] = False,
    max_cost: Annotated[
        float | None, typer.Option(help="Budget: pause at a checkpoint when the job has cost this much (rft billing).")
    ] = None,
    max_device_hours: Annotated[float | None, typer.Option(help="Budget in device-hours, whatever the prices.")] = None,
    estimate: Annotated[
        bool, typer.Option("--estimate", help="Print what the job would take and cost, and create nothing.")
    ] = False,
    idempotency_key: Annotated[str | None, typer.Option(help="Retry-safe creation (same key, same job).")] = None,
    follow: Annotated[bool, typer.Option("--follow", help="Follow the job after creating it.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Create a GRPO job from flags and/or a job file (flags win); ``--estimate`` only says what it would cost."""
    config: Config = ctx.obj
    spec = load_mapping(file) if file else {}
    for key, flag in (("training_file", training_file), ("validation_file", validation_file)):
        if flag is None and spec.get(key):  # a path in the job file is relative to the job file
            spec[key] = _file_ref(config, spec[key], file.parent if file else None)
    body = build_job_body(
        spec,
        model=model,
        training_file=_file_ref(config, training_file),
        validation_file=_file_ref(config, validation_file),
        grader=grader_from_file(grader, grader_name) if grader else None,
        recipe=recipe,
        hyperparameters=parse_assignments(hp or []),
        seed=seed,
        suffix=suffix,
        metadata=parse_pairs(metadata or []),
        devices=devices,
        nodes=nodes,
        rollout_devices=rollout_devices,
    )
    if preflight:
        body["preflight"] = True
    if priority is not None:
        body["priority"] = priority
    if preemptible is not None:
        body["preemptible"] = preemptible
    if max_cost is not None or max_device_hours is not None:
        body["budget"] = {k: v for k, v in (("max_cost", max_cost), ("max_device_hours", max_device_hours)) if v}
    try:
        model_body = JobCreate.from_dict(body)
    except (KeyError, TypeError, ValueError) as exc:
        raise CliError(f"the job spec does not fit the API's schema: {type(exc).__name__}: {exc}") from exc
    lost = dropped_keys(body, model_body.to_dict())
    if lost:
        raise CliError(f"unknown field(s) for this API: {', '.join(lost)}")
    if estimate:
        answer = parsed(call(estimate_job, config, body=model_body))
        print_json(answer) if as_json else estimate_lines(answer)
        return
    kwargs: dict[str, Any] = {"body": model_body}
    if idempotency_key:
        kwargs["idempotency_key"] = idempotency_key
    job = parsed(call(create_preflight if preflight_only else create_job, config, **kwargs))
    if as_json:
        print_json(job)
    else:
        console.print(f"created [bold]{job['id']}[/] ({job['status']}, {job['total_steps']} steps)")
    if follow:
        raise typer.Exit(follow_job(config, job["id"], err_console if as_json else console, err_console))


@app.command("list")
def list_(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(min=1, max=100)] = 20,
    after: Annotated[str | None, typer.Option(help="Page after this job id.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Jobs, newest first."""
    page = parsed(call(list_jobs, ctx.obj, limit=limit, after=after))
    if as_json:
        print_json(page)
        return
    if not page["data"]:
        console.print("no jobs")
        return
    console.print(jobs_table(page["data"]))
    if page.get("has_more"):
        console.print(f"[dim]more: rft jobs list --after {page['data'][-1]['id']}[/]")


@app.command("get")
def get(ctx: typer.Context, job_id: JobId, as_json: JsonFlag = False) -> None:
    """One job: status, steps, grader, hyperparameters, error."""
    job = parsed(call(retrieve_job, ctx.obj, fine_tuning_job_id=job_id))
    print_json(job) if as_json else job_summary(job)


def _control(ctx: typer.Context, endpoint: Any, job_id: str, as_json: bool) -> None:
    job = parsed(call(endpoint, ctx.obj, fine_tuning_job_id=job_id))
    if as_json:
        print_json(job)
    else:
        console.print(f"{job['id']}: {job['status']}")


@app.command("cancel")
def cancel(ctx: typer.Context, job_id: JobId, as_json: JsonFlag = False) -> None:
    """Cancel: queued/paused at once; running stops at the next step boundary (cancelling -> cancelled)."""
    _control(ctx, cancel_job, job_id, as_json)


@app.command("pause")
def pause(ctx: typer.Context, job_id: JobId, as_json: JsonFlag = False) -> None:
    """Pause: checkpoint at the next step boundary and free the worker (pausing -> paused)."""
    _control(ctx, pause_job, job_id, as_json)


@app.command("resume")
def resume(ctx: typer.Context, job_id: JobId, as_json: JsonFlag = False) -> None:
    """Resume a paused job from its checkpoint."""
    _control(ctx, resume_job, job_id, as_json)


@app.command("budget")
def budget(
    ctx: typer.Context,
    job_id: JobId,
    max_cost: Annotated[float | None, typer.Option(help="In the project's unit (rft billing); unset: none.")] = None,
    max_device_hours: Annotated[float | None, typer.Option(help="Device-hours; unset: none.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Replace a job's budget (neither option: no budget). A job paused at its cap then needs rft jobs resume."""
    body = JobBudget(max_cost=max_cost, max_device_hours=max_device_hours)
    job = parsed(call(set_budget, ctx.obj, fine_tuning_job_id=job_id, body=body))
    if as_json:
        print_json(job)
    else:
        console.print(f"{job['id']}: budget {job.get('budget') or 'none'}, spent {cost_text(job['usage'].get('cost'))}")


@app.command("follow")
def follow(
    ctx: typer.Context,
    job_id: JobId,
    interval: Annotated[float, typer.Option(min=0.1, help="Seconds between polls.")] = 2.0,
    timeout: Annotated[float | None, typer.Option(help="Give up after this many seconds (exit 124).")] = None,
) -> None:
    """Live progress (step/total, train reward + sparkline, ETA) until the job ends.

    Exit 0 when it succeeded, 1 when it failed or was cancelled (the error is printed). A paused job is followed
    until it is resumed and ends; --timeout gives up (exit 124) and Ctrl-C stops following (exit 130), the job
    keeps running either way.
    """
    raise typer.Exit(follow_job(ctx.obj, job_id, console, err_console, interval=interval, timeout=timeout))


@app.command("readiness")
def readiness(ctx: typer.Context, job_id: JobId, as_json: JsonFlag = False) -> None:
    """The RL-readiness report: the base model's verdict, pass histogram and findings before training, and the
    per-prompt comparison after it (jobs created with --preflight or --preflight-only)."""
    report = parsed(call(get_readiness, ctx.obj, fine_tuning_job_id=job_id))
    if as_json:
        print_json(report)
        return
    for line in readiness_lines(report):
        console.print(line, markup=False, soft_wrap=True)


@app.command("events")
def events(
    ctx: typer.Context,
    job_id: JobId,
    limit: Annotated[int, typer.Option(min=1, help="How many of the newest events.")] = 20,
    as_json: JsonFlag = False,
) -> None:
    """The newest events (messages and per-step metrics), oldest of them first."""
    evs = []
    for ev in iter_events(ctx.obj, job_id, page_size=min(limit, 100)):
        evs.append(ev)
        if len(evs) >= limit:
            break
    if as_json:
        print_json([ev.to_dict() for ev in evs])
        return
    for ev in reversed(evs):
        console.print(f"{when(ev.created_at)} [{ev.level}] {ev.message}", markup=False, soft_wrap=True)


@app.command("samples")
def samples(
    ctx: typer.Context,
    job_id: JobId,
    step: Annotated[int | None, typer.Option(min=1, help="A step; the latest one by default.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """The rollouts logged at a step: prompt, completion, reward, advantage."""
    at = UNSET if step is None else step
    try:
        got = fetch(list_samples, ctx.obj, SamplesResponse, fine_tuning_job_id=job_id, step=at)
    except ApiError as exc:
        if exc.status != 404 or exc.param != "step":
            raise
        none = f"{job_id} has no metrics for step {step}" if step else f"{job_id} has no finished step yet"
        raise CliError(none) from None
    if as_json:
        print_json({"step": got.step, "samples": [s.to_dict() for s in got.data]})
    elif not got.data:
        console.print(f"step {got.step} logged no rollouts (sample_log_count)")
    else:
        console.print(samples_table(got.step, got.data))


@app.command("checkpoints")
def checkpoints(ctx: typer.Context, job_id: JobId, as_json: JsonFlag = False) -> None:
    """Saved adapters, newest first ("best" marks the highest validation reward)."""
    page = fetch(list_checkpoints, ctx.obj, ListResponseCheckpoint, fine_tuning_job_id=job_id, limit=100)
    if as_json:
        print_json(page.to_dict())
        return
    for c in page.data:
        valid = c.metrics.valid_reward_mean
        console.print(
            f"{c.id}  step {c.step_number}"
            + (f"  valid {valid:.3f}" if isinstance(valid, float) else "")
            + ("  [green]best[/]" if c.best is True else "")
        )
