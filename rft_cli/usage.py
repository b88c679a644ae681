"""``rft usage``: what this project used (``GET /v1/usage``), by day, job or attempt, with the totals and their
cost; ``rft billing``: its prices, monthly budget and month so far (``GET /v1/billing``)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rft_client.api.billing import get_billing
from rft_client.api.usage import get_usage
from rft_client.models.get_usage_group_by import GET_USAGE_GROUP_BY_VALUES, check_get_usage_group_by
from rft_client.models.usage_kind import USAGE_KIND_VALUES, check_usage_kind
from rft_client.types import UNSET
from rich.markup import escape
from rich.table import Table

from rft_cli.api import CliError, call, parsed
from rft_cli.render import console, print_json

_AGO = re.compile(r"^(\d+)([dhm])$")
_UNIT_SECONDS = {"d": 86_400, "h": 3_600, "m": 60}
COLUMNS = (  # (heading, field, format); a column whose total is 0 is left out
    ("device-h", "device_seconds", lambda v: f"{v / 3600:.2f}"),
    ("steps", "steps", str),
    ("sampled", "sampled_tokens", str),
    ("trained", "trained_tokens", str),
    ("graded", "grader_calls", str),
    ("grader-s", "grader_seconds", lambda v: f"{v:.1f}"),
    ("eval", "eval_tokens", str),
    ("inference", "inference_tokens", str),
    ("cost", "cost", lambda v: f"{v['amount']:.4g}" if isinstance(v, dict) and v.get("unit") != "device_hour" else "-"),
)
CAPTION = "device-h: device-hours; sampled, trained, eval, inference: tokens; graded: grader calls"


def parse_since(value: str, now: float | None = None) -> int:
    """``7d``, ``12h``, ``30m`` ago; a UTC date ``2026-11-01``; or Unix seconds: the start of the window."""
    t = time.time() if now is None else now
    if value.isdigit():
        return int(value)
    if m := _AGO.match(value):
        return int(t) - int(m.group(1)) * _UNIT_SECONDS[m.group(2)]
    try:
        return int(datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC).timestamp())
    except ValueError:
        raise CliError(f"--since {value!r}: give 7d, 12h, 30m, a date (2026-11-01) or Unix seconds") from None


def usage_table(page: dict[str, Any], by: str) -> Table:
    """One row a bucket, then the totals; only the columns with something in them."""
    totals = page["totals"]
    priced = (totals.get("cost") or {}).get("unit") not in (None, "device_hour")
    keep = ("device_seconds", "steps") + (("cost",) if priced else ())
    columns = [c for c in COLUMNS if (c[1] != "cost" and totals.get(c[1])) or c[1] in keep]
    table = Table(box=None, header_style="bold", caption=CAPTION, caption_justify="left")
    table.add_column({"day": "day", "job": "job"}.get(by, "job, attempt"), no_wrap=True)
    for heading, _, _ in columns:
        table.add_column(heading, justify="right")
    for b in page["data"]:
        label = b.get("day") if by == "day" else (b.get("job_id") or "(evals, sessions, inference)")
        if by == "attempt" and b.get("attempt") is not None:
            label = f"{label} #{b['attempt']}"
        table.add_row(escape(str(label)), *(fmt(b.get(field) or 0) for _, field, fmt in columns))
    table.add_row("[bold]total[/]", *(f"[bold]{fmt(totals.get(field) or 0)}[/]" for _, field, fmt in columns))
    return table


def usage(
    ctx: typer.Context,
    by: Annotated[
        str, typer.Option("--by", help="One row a UTC day (day), a job (job) or a job's attempt (attempt).")
    ] = "day",
    job: Annotated[str | None, typer.Option("--job", help="Only this job (ftjob-…).")] = None,
    since: Annotated[str | None, typer.Option(help="From: 7d, 12h, a date (2026-11-01) or Unix seconds.")] = None,
    kind: Annotated[str | None, typer.Option(help="Only job, eval, session or inference records.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the API's JSON instead of a table.")] = False,
) -> None:
    """Device-hours, steps, tokens and grader calls of this project, newest first, and the totals."""
    if by not in GET_USAGE_GROUP_BY_VALUES:
        raise CliError(f"--by {by!r}: one of {', '.join(sorted(GET_USAGE_GROUP_BY_VALUES))}")
    if kind is not None and kind not in USAGE_KIND_VALUES:
        raise CliError(f"--kind {kind!r}: one of {', '.join(sorted(USAGE_KIND_VALUES))}")
    page = parsed(
        call(
            get_usage,
            ctx.obj,
            group_by=check_get_usage_group_by(by),
            job_id=job or UNSET,
            start_time=parse_since(since) if since else UNSET,
            kind=check_usage_kind(kind) if kind else UNSET,
            limit=1000,
        )
    )
    if as_json:
        print_json(page)
        return
    console.print(usage_table(page, by))
    by_kind = page["totals"].get("device_seconds_by_kind") or {}
    if by_kind:
        console.print(
            "device-hours by device: " + ", ".join(f"{escape(k)} {s / 3600:.2f}" for k, s in sorted(by_kind.items()))
        )
    cost = page["totals"].get("cost")
    if cost and cost.get("unit") != "device_hour":
        console.print(f"cost: {cost['amount']:.4g} {cost['unit']} at this project's prices (rft billing)")
    if page.get("has_more"):
        console.print("[yellow]more buckets than shown: narrow --since[/]")


def billing(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the API's JSON.")] = False,
) -> None:
    """This project's prices, its monthly budget and what it spent this UTC month."""
    b = parsed(call(get_billing, ctx.obj))
    if as_json:
        print_json(b)
        return
    unit = "device-hours" if b["unit"] == "device_hour" else b["unit"]
    prices = ", ".join(f"{escape(k)} {v:g}" for k, v in b["device_hour"].items()) or "none set (costs in device-hours)"
    console.print(f"prices ({unit} a device-hour): {prices}")
    if b["unit"] != "device_hour":
        console.print(
            f"inference: {b['inference_per_million_tokens']:g} {unit} a million tokens; discount {b['discount']:.0%}"
        )
    budget = "none" if b["monthly_budget"] is None else f"{b['monthly_budget']:g} {unit}"
    spent = b["spent_this_month"]
    state = " [red](over budget: new jobs and training calls are refused)[/]" if b["over_budget"] else ""
    console.print(f"{b['month']}: spent {spent['amount']:.4g} {unit} of a monthly budget of {budget}{state}")
