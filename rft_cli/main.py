"""The ``rft`` command (entry point ``rft = "rft_cli.main:app"``).

    rft files upload train.jsonl
    rft jobs create --model SmolLM2-135M-Instruct --training-file file-… --grader grader.py --hp max_steps=20
    rft jobs follow ftjob-…
    rft adapters download ftjob-… -o adapter/
    rft chat ft:SmolLM2-135M-Instruct:rft:ftjob-… "What is 2 + 3?"
    rft usage --by job --since 7d
    rft secrets set wandb < key.txt         # then a job names it: integrations [{type: wandb, api_key_secret: wandb}]

RFT_BASE_URL and RFT_API_KEY (or --base-url / --api-key) say where the service is. An error from the API is
printed as one line in its own words (status, type, code, message, param) and the exit code is 1.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rft_client.api.models import list_base_models
from rich.markup import escape
from typer.core import TyperGroup

from rft_cli import adapters, chat, files, graders, jobs, project_secrets, usage
from rft_cli.api import DEFAULT_BASE_URL, CliError, Config, call, parsed
from rft_cli.render import console, err_console, print_json


class _CleanErrors(TyperGroup):
    """Turns ``CliError`` (API errors, unreachable API, bad input) into one line on stderr and an exit code.

    Done at the root group, not in ``__call__``, so the same handling applies under typer's CliRunner."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except CliError as exc:
            err_console.print(f"[red]error:[/] {escape(exc.message)}", highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None


app = typer.Typer(
    name="rft",
    cls=_CleanErrors,
    help="Reinforcement fine-tuning (GRPO) as a service: datasets, jobs, adapters, graders.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # a bug's traceback must never print the API key held in locals
)
app.add_typer(files.app, name="files", no_args_is_help=True)
app.add_typer(jobs.app, name="jobs", no_args_is_help=True)
app.add_typer(adapters.app, name="adapters", no_args_is_help=True)
app.add_typer(graders.app, name="graders", no_args_is_help=True)
app.add_typer(project_secrets.app, name="secrets", no_args_is_help=True)
app.command("chat")(chat.chat)
app.command("usage")(usage.usage)
app.command("billing")(usage.billing)
models_app = typer.Typer(
    help="Base models the workers can fine-tune, and your fine-tuned models.", no_args_is_help=True
)
app.add_typer(models_app, name="models")


@app.callback()
def root(
    ctx: typer.Context,
    base_url: Annotated[str, typer.Option(envvar="RFT_BASE_URL", help="The service's URL.")] = DEFAULT_BASE_URL,
    api_key: Annotated[
        str | None, typer.Option(envvar="RFT_API_KEY", help="Bearer key (unset: an open, local service).")
    ] = None,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds per HTTP request.")] = 60.0,
) -> None:
    config = Config(base_url=base_url, api_key=api_key or None, timeout=timeout)
    ctx.obj = config
    ctx.call_on_close(config.close)


@models_app.command("list")
def models_list(ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Base model ids (for rft jobs create --model), then this project's fine-tuned models (for rft chat)."""
    page = parsed(call(list_base_models, ctx.obj))
    if as_json:
        print_json(page)
        return
    for m in page["data"]:  # base models, then this project's fine-tuned models (for rft chat) with their base
        console.print(m["id"] + _model_details(m), markup=False)


def _model_details(m: dict[str, Any]) -> str:
    """What a user picks a base model by: architecture, size, dtype, context (registered models carry them)."""
    if m.get("parent"):
        return f"  (fine-tuned from {m['parent']})"
    parts = [
        m.get("architecture"),
        f"{m['parameter_count'] / 1e9:.2f}B params" if m.get("parameter_count") else None,
        m.get("dtype"),
        f"context {m['context_length']}" if m.get("context_length") else None,
    ]
    shown = [p for p in parts if p]
    return f"  ({', '.join(shown)})" if shown else ""


if __name__ == "__main__":
    app()
