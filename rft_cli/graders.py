"""``rft graders``: try a grader on one sample before spending a job on it (OpenAI's graders/run, validate)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rft_client.api.graders import run_grader, validate_grader
from rft_client.models import RunRequest, ValidateRequest

from rft_cli.api import CliError, call, parsed
from rft_cli.jobspec import dropped_keys, grader_from_file
from rft_cli.render import console, print_json

app = typer.Typer(help="Check a grader and score one sample with it.")

GraderFile = Annotated[Path, typer.Option("--grader", "-g", help="Grader JSON/YAML, or a .py python grader.")]


def _item(raw: str) -> dict[str, Any]:
    """``--item`` is a JSON object, or ``@path`` to a file holding one (a dataset row)."""
    text = Path(raw[1:]).read_text(encoding="utf-8") if raw.startswith("@") else raw
    try:
        item = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"--item is not valid JSON: {exc}") from exc
    if not isinstance(item, dict):
        raise CliError("--item must be a JSON object (the dataset row)")
    return item


def _checked(model_cls: Any, body: dict[str, Any]) -> Any:
    """The generated request model, refusing keys its schema would silently drop."""
    try:
        model = model_cls.from_dict(body)
    except (KeyError, TypeError, ValueError) as exc:
        raise CliError(f"the grader does not fit the API's schema: {type(exc).__name__}: {exc}") from exc
    lost = dropped_keys(body, model.to_dict())
    if lost:
        raise CliError(f"unknown field(s) for this API: {', '.join(lost)}")
    return model


@app.command("run")
def run(
    ctx: typer.Context,
    grader: GraderFile,
    sample: Annotated[str, typer.Option("--sample", "-s", help="The completion to score (sample.output_text).")],
    item: Annotated[str, typer.Option("--item", "-i", help="The dataset row as JSON, or @row.json.")] = "{}",
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Score --sample against --item: reward, sub-rewards and error flags."""
    body = {"grader": grader_from_file(grader), "model_sample": sample, "item": _item(item)}
    result = parsed(call(run_grader, ctx.obj, body=_checked(RunRequest, body)))
    if as_json:
        print_json(result)
        return
    console.print(f"reward [bold]{result['reward']}[/]")
    if result.get("sub_rewards"):
        console.print("sub_rewards " + json.dumps(result["sub_rewards"]), markup=False)
    errors = {k: v for k, v in ((result.get("metadata") or {}).get("errors") or {}).items() if v}
    if errors:
        console.print("[yellow]errors[/] " + ", ".join(sorted(errors)))


@app.command("validate")
def validate(ctx: typer.Context, grader: GraderFile) -> None:
    """Schema, formula and (python) import in the sandbox; the API's 422 explains what is wrong."""
    call(validate_grader, ctx.obj, body=_checked(ValidateRequest, {"grader": grader_from_file(grader)}))
    console.print("grader is valid")
