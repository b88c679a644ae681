"""``rft files``: upload a JSONL dataset (checked line by line by the API) and look one up."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rft_client.api.files import create_file, retrieve_file
from rft_client.models import BodyCreateFile
from rft_client.types import File

from rft_cli.api import CliError, Config, call, parsed
from rft_cli.render import console, print_json, when

app = typer.Typer(help="Datasets: JSONL, one object per line with a prompt (or messages) and your columns.")


def upload_file(
    config: Config, path: Path, purpose: str = "fine-tune", idempotency_key: str | None = None
) -> dict[str, Any]:
    """Upload ``path`` and return the file object (shared with ``rft jobs create --training-file PATH``)."""
    if not path.is_file():
        raise CliError(f"{path}: no such file")
    kwargs: dict[str, Any] = {}
    if idempotency_key:
        kwargs["idempotency_key"] = idempotency_key
    with path.open("rb") as fh:
        upload = File(payload=fh, file_name=path.name, mime_type="application/jsonl")
        body = BodyCreateFile(file=upload, purpose=purpose)
        return parsed(call(create_file, config, body=body, **kwargs))


@app.command("upload")
def upload(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="A JSONL file.")],
    purpose: Annotated[str, typer.Option(help="OpenAI's purpose field.")] = "fine-tune",
    idempotency_key: Annotated[str | None, typer.Option(help="Retry-safe upload (same key, same file).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the file object as JSON.")] = False,
) -> None:
    """Upload a dataset; prints its id (file-…)."""
    f = upload_file(ctx.obj, path, purpose, idempotency_key)
    if as_json:
        print_json(f)
    else:
        console.print(f"[bold]{f['id']}[/]  {f['filename']}  {f['row_count']} rows  {f['bytes']} bytes")


@app.command("get")
def get(
    ctx: typer.Context,
    file_id: Annotated[str, typer.Argument(help="The file id (file-…).")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """One uploaded file: name, rows, bytes, sha256."""
    f = parsed(call(retrieve_file, ctx.obj, file_id=file_id))
    if as_json:
        print_json(f)
        return
    console.print(
        f"[bold]{f['id']}[/]  {f['filename']}  {f['row_count']} rows  {f['bytes']} bytes  "
        f"sha256 {f['sha256'][:12]}…  {when(f['created_at'])}"
    )
