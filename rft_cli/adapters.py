"""``rft adapters download``: a checkpoint's LoRA adapter, extracted into a folder PeftModel can load."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rft_client.api.fine_tuning import download_checkpoint, list_checkpoints

from rft_cli.api import CliError, Config, call, parsed
from rft_cli.render import console

app = typer.Typer(help="Trained LoRA adapters (PEFT format).")


def pick_checkpoint(config: Config, job_id: str, checkpoint_id: str | None, best: bool) -> dict[str, Any]:
    """The given checkpoint, the best-validated one, or the newest (the final adapter of a finished job)."""
    after: str | None = None
    newest: dict[str, Any] | None = None
    while True:
        page = parsed(call(list_checkpoints, config, fine_tuning_job_id=job_id, limit=100, after=after))
        for c in page["data"]:
            newest = newest or c
            if (checkpoint_id and c["id"] == checkpoint_id) or (best and c.get("best")):
                return c
        if not checkpoint_id and not best and newest is not None:
            return newest
        if not page.get("has_more") or not page["data"]:
            break
        after = page["data"][-1]["id"]
    if checkpoint_id:
        raise CliError(f"{job_id} has no checkpoint {checkpoint_id} (rft jobs checkpoints {job_id})")
    if best:
        raise CliError(f"{job_id} has no best checkpoint (it needs a validation_file)")
    raise CliError(f"{job_id} has no checkpoint yet")


def extract_adapter(data: bytes, out_dir: Path) -> list[str]:
    """Unpack the tar with tarfile's ``data`` filter: regular files only, nothing outside ``out_dir``."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            names = sorted(m.name for m in tar.getmembers() if m.isfile())
            out_dir.mkdir(parents=True, exist_ok=True)
            tar.extractall(out_dir, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise CliError(f"could not unpack the adapter into {out_dir}: {exc}") from exc
    return names


@app.command("download")
def download(
    ctx: typer.Context,
    job_id: Annotated[str, typer.Argument(help="The job id (ftjob-…).")],
    checkpoint: Annotated[str | None, typer.Option("--checkpoint", "-c", help="A checkpoint id (ftckpt-…).")] = None,
    best: Annotated[bool, typer.Option("--best", help="The checkpoint with the best validation reward.")] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Folder for the PEFT files (default ./<checkpoint id>).")
    ] = None,
) -> None:
    """Download a checkpoint (default: the newest) and extract adapter_config.json + adapter_model.safetensors."""
    config: Config = ctx.obj
    ckpt = pick_checkpoint(config, job_id, checkpoint, best)
    resp = call(download_checkpoint, config, fine_tuning_job_id=job_id, checkpoint_id=ckpt["id"])
    out_dir = output or Path(ckpt["id"])
    names = extract_adapter(resp.content, out_dir)
    console.print(
        f"{ckpt['id']} (step {ckpt['step_number']}, {len(resp.content)} bytes) -> {out_dir}: {', '.join(names)}",
        highlight=False,
        soft_wrap=True,
    )


@app.command("merge")
def merge(
    adapter: Annotated[Path, typer.Argument(help="A downloaded adapter folder (rft adapters download).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder for the merged model (must not exist).")],
    base: Annotated[
        str | None,
        typer.Option(
            help="The base model's folder (default: the adapter's base_model_name_or_path, looked up in "
            "--catalog, else as a local folder or a hub id your cache holds)."
        ),
    ] = None,
    catalog: Annotated[
        Path | None,
        typer.Option(envvar="MODEL_CATALOG_DIR", help="A folder of base models by id (the service's catalog)."),
    ] = None,
    dtype: Annotated[str, typer.Option(help="auto (the base's), float32, bfloat16 or float16.")] = "auto",
) -> None:
    """Merge an adapter into its base model (peft merge_and_unload): a plain HF folder with safetensors, for
    servers without LoRA support. Needs torch, transformers and peft (pip install 'rft-service[train]')."""
    from rft_cli.merge import MergeError, base_of, merge_adapter

    if dtype not in ("auto", "float32", "bfloat16", "float16"):
        raise CliError(f"--dtype must be auto, float32, bfloat16 or float16, not {dtype!r}")
    try:
        source = base or base_of(adapter, catalog)
        names = merge_adapter(adapter, source, output, dtype)
    except MergeError as exc:
        raise CliError(str(exc)) from None
    console.print(f"{adapter} + {source} -> {output}: {', '.join(names)}", highlight=False, soft_wrap=True)
