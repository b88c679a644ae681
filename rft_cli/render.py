"""How objects look on the terminal. ``--json`` output bypasses rich entirely: it is for machines and scripts."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any

from rft_client.models import Sample
from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

STATUS_STYLE = {
    "succeeded": "green",
    "failed": "red",
    "cancelled": "red",
    "cancelling": "yellow",
    "pausing": "yellow",
    "paused": "yellow",
    "running": "cyan",
    "queued": "blue",
}


def print_json(data: Any) -> None:
    """Plain, unwrapped JSON on stdout (rich would wrap long strings at the console width)."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def when(ts: int | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%SZ") if ts else "-"


def status_text(status: str) -> str:
    style = STATUS_STYLE.get(status, "")
    return f"[{style}]{status}[/]" if style else status


def jobs_table(jobs: list[dict[str, Any]]) -> Table:
    table = Table(box=None, header_style="bold")
    # ids are what people copy into the next command: never shortened, whatever the width
    table.add_column("id", no_wrap=True, min_width=max((len(j["id"]) for j in jobs), default=2))
    for col in ("status", "model", "steps", "created", "error"):
        table.add_column(col)
    for j in jobs:
        err = j.get("error") or {}
        table.add_row(
            j["id"],
            status_text(j["status"]),
            escape(j["model"]),
            f"{j.get('steps_done', 0)}/{j.get('total_steps', '?')}",
            when(j.get("created_at")),
            escape(err.get("code") or ""),
        )
    return table


def job_summary(j: dict[str, Any]) -> None:
    """The fields a person asks about first; ``--json`` has everything."""
    rl = (j.get("method") or {}).get("reinforcement") or {}
    grader = rl.get("grader") or {}
    hp = j.get("hyperparameters") or {}
    rows = [
        ("id", j["id"]),
        ("status", status_text(j["status"])),
        *([("waiting", escape(j["waiting"]["reason"]))] if j.get("waiting") else []),
        ("priority", f"{j.get('priority', 0)}{'' if j.get('preemptible', True) else ', not preemptible'}"),
        ("model", escape(j["model"])),
        ("steps", f"{j.get('steps_done', 0)}/{j.get('total_steps', '?')}"),
        ("training_file", j.get("training_file")),
        ("validation_file", j.get("validation_file") or "-"),
        ("grader", escape(f"{grader.get('type', '?')} {grader.get('name') or ''}".strip())),
        (
            "hyperparameters",
            escape(
                ", ".join(
                    f"{k}={hp[k]}"
                    for k in ("recipe", "group_size", "batch_size", "learning_rate", "beta", "max_steps")
                    if hp.get(k) is not None
                )
            ),
        ),
        ("resources", _resources(j.get("resources") or {})),
        ("fine_tuned_model", escape(j.get("fine_tuned_model") or "-")),
        ("cost", cost_text((j.get("usage") or {}).get("cost"))),
        ("budget", _budget(j)),
        ("created", when(j.get("created_at"))),
        ("finished", when(j.get("finished_at"))),
    ]
    error = j.get("error")
    if error:
        rows.append(("error", f"[red]{escape(error.get('code') or '')}: {escape(error.get('message', ''))}[/]"))
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for k, v in rows:
        table.add_row(k, str(v))
    console.print(table)


def _resources(r: dict[str, Any]) -> str:
    devices, nodes, rollout = r.get("devices", 1), r.get("nodes", 1), r.get("rollout_devices") or 0
    text = f"{devices} device{'s' * (devices != 1)} × {nodes} node{'s' * (nodes != 1)}"
    return text + (f", {rollout} of them the sampler's" if rollout else "")


def short(value: Any, width: int = 300) -> str:
    """A prompt (string or chat messages) or completion on a line or a few."""
    if isinstance(value, list):  # chat messages: show the last user turn
        turns = [m.get("content", "") for m in value if isinstance(m, dict)]
        value = turns[-1] if turns else json.dumps(value)
    text = str(value)
    return escape(text if len(text) <= width else text[: width - 1] + "…")


def samples_table(step: int, samples: list[Sample]) -> Table:
    table = Table(title=f"rollouts of step {step}", show_lines=True, header_style="bold")
    table.add_column("#", justify="right")
    table.add_column("prompt", ratio=2)
    table.add_column("completion", ratio=3)
    table.add_column("reward", justify="right")
    table.add_column("advantage", justify="right")
    for i, s in enumerate(samples, 1):
        table.add_row(
            str(i),
            short(s.prompt),
            short(s.completion),
            "-" if s.reward is None else f"{s.reward:.3f}",
            f"{s.advantage:+.3f}",
        )
    return table


def readiness_lines(r: dict[str, Any]) -> list[str]:
    """The readiness report as text: verdict, the pass histogram as bars, findings, and the comparison."""
    before = r.get("before")
    if not r.get("requested"):
        return ["this job asked for no readiness probe (create it with --preflight or --preflight-only)"]
    if before is None:
        return ["the worker has not probed the base model yet"]
    k, top = before["samples_per_prompt"], max(1, *before["histogram"])
    mean = "n/a" if before["mean_reward"] is None else f"{before['mean_reward']:.3f}"
    lines = [
        f"verdict: {before['verdict'].replace('_', ' ')}  ({before['prompts']} prompts × {k} samples of the base "
        f"model, mean reward {mean})",
        "prompts by samples passed:",
    ]
    lines += [f"  {i:>2}/{k}  {'#' * round(30 * n / top):<30} {n}" for i, n in enumerate(before["histogram"])]
    lines += [f"- {f}" for f in before["findings"]]
    if r.get("dropped_rows"):
        lines.append(f"{len(r['dropped_rows'])} prompts without signal left out of training")
    if r.get("comparison"):
        lines.append(f"after training: {r['comparison']['summary']}")
    return lines


def cost_text(cost: dict[str, Any] | None) -> str:
    """``0.0123 USD (0.0034 device-hours)``, or the device-hours alone where nothing is priced."""
    if not cost:
        return "-"
    hours = f"{cost['device_hours']:.4g} device-hours"
    return hours if cost["unit"] == "device_hour" else f"{cost['amount']:.4g} {cost['unit']} ({hours})"


def _budget(j: dict[str, Any]) -> str:
    b = j.get("budget") or {}
    caps = ", ".join(f"{k} {v:g}" for k, v in b.items() if v) or "none"
    return caps + (f" ([yellow]{j['budget_alert']}[/])" if j.get("budget_alert") else "")


def estimate_lines(e: dict[str, Any]) -> None:
    """What ``rft jobs create --estimate`` prints: the figures with their ranges, what drives them, how sure."""
    d, unit = e["drivers"], e["unit"]
    money = "device-hours" if unit == "device_hour" else unit

    def span(s: dict[str, float], fmt: str = ".3g") -> str:
        return f"{s['expected']:{fmt}} ({s['low']:{fmt}} to {s['high']:{fmt}})"

    console.print(f"estimate for {escape(e['model'])} on {escape(e['device_kind'])} ({e['confidence']} confidence)")
    if unit != "device_hour":  # unpriced, the cost is the device time below
        console.print(f"  cost         : {span(e['cost'])} {money}")
    console.print(f"  device time  : {span(e['device_hours'])} device-hours; {span(e['step_seconds'])} s a step")
    console.print(
        f"  the work     : {d['steps']} steps × {d['prompts_per_step']} prompts × {d['samples_per_prompt']} samples × "
        f"~{d['completion_tokens_per_sample']:.0f} tokens = {d['sampled_tokens']} sampled tokens, "
        f"{d['grader_calls']} grader calls, {d['evals']} validation prompts; {d['devices']} device(s)"
    )
    console.print(f"  [dim]{escape(e['basis'])}[/]")
