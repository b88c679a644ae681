"""``rft secrets``: a project's secrets (a W&B API key its jobs log with): write one, list them, delete one.

The value is never a command-line argument (shell history, other users' ``ps``): ``set`` reads it from stdin when
something is piped in, from an environment variable with ``--from-env``, or from a hidden prompt. The API never
returns it; ``list`` shows a hint (its last 4 characters) to recognise it by.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer
from rft_client.api.secrets import delete_secret, list_secrets, write_secret
from rft_client.models import SecretCreate
from rich.markup import escape
from rich.table import Table

from rft_cli.api import CliError, call, parsed
from rft_cli.render import console, print_json, when

app = typer.Typer(help="Project secrets (e.g. a W&B API key a job names): write-only, encrypted by the service.")


def read_value(from_env: str | None) -> str:
    """The secret's value from ``$from_env``, piped stdin, or a hidden prompt (in that order); one trailing newline
    of piped input is dropped (``echo "$KEY" | rft secrets set wandb``)."""
    if from_env is not None:
        found = os.environ.get(from_env)
        if not found:
            raise CliError(f"--from-env {from_env}: that environment variable is not set")
        return found
    if not sys.stdin.isatty():
        piped = sys.stdin.read().removesuffix("\n").removesuffix("\r")
        if not piped:
            raise CliError("nothing on stdin: pipe the value in, or run without a pipe to be prompted")
        return piped
    entered: str = typer.prompt("Value", hide_input=True)
    return entered


@app.command("set")
def set_secret(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="1 to 64 letters, digits, _ . or -; what a job's integrations name.")],
    from_env: Annotated[
        str | None, typer.Option("--from-env", metavar="VAR", help="Read the value from this environment variable.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the secret object (never its value) as JSON.")] = False,
) -> None:
    """Write a secret (a new name creates it, an existing one rotates it); the value comes from stdin, --from-env or
    a hidden prompt, never the command line."""
    body = SecretCreate(name=name, value=read_value(from_env))
    secret = parsed(call(write_secret, ctx.obj, body=body))
    if as_json:
        print_json(secret)
    else:
        console.print(f"wrote secret [bold]{escape(secret['name'])}[/] ({escape(secret['hint'])})")


@app.command("list")
def list_(ctx: typer.Context, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """This project's secrets: names and hints, never values."""
    page = parsed(call(list_secrets, ctx.obj))
    if as_json:
        print_json(page)
        return
    table = Table(box=None, header_style="bold")
    for col in ("name", "hint", "created", "updated"):
        table.add_column(col, no_wrap=col == "name")
    for s in page["data"]:
        table.add_row(escape(s["name"]), escape(s["hint"]), when(s["created_at"]), when(s["updated_at"]))
    console.print(table)


@app.command("delete")
def delete(ctx: typer.Context, name: Annotated[str, typer.Argument(help="The secret's name.")]) -> None:
    """Delete a secret at once; a queued job that names it fails when it starts, saying which."""
    call(delete_secret, ctx.obj, secret_name=name)
    console.print(f"deleted secret [bold]{escape(name)}[/]")
