"""`make openapi` / `make check-openapi`: openapi.json and the generated Python client, kept equal to the app.

The spec (``openapi.json``) and the client (``clients/python``, package ``rft_client``, by openapi-python-client)
are committed, so users and the ``rft`` CLI get a typed client without running the service. Both are produced
from ``api.main:create_app().openapi()``, which needs no database, broker or object store (the lifespan is
never entered). Every file of the client starts with a line saying it is generated (``mark_generated``;
``.gitattributes`` marks the folder ``linguist-generated``). ``write`` regenerates them; ``check`` regenerates
both into a temporary directory and exits 1 with a summary of the drift, so a route changed without
regeneration fails ``make test``.

    python -m scripts.openapi write
    python -m scripts.openapi check [--spec openapi.json] [--client-dir clients/python]
"""

from __future__ import annotations

import argparse
import copy
import difflib
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SPEC_PATH = ROOT / "openapi.json"
CLIENT_DIR = ROOT / "clients" / "python"
GENERATOR_CONFIG = ROOT / "clients" / "openapi-python-client.yaml"
TEMPLATES = ROOT / "clients" / "templates"  # ours instead of the generator's (the client's README.md)
# Build and tool leftovers inside the client folder (pip install -e, pytest, ruff): never compared or deleted.
IGNORED = ("__pycache__", "*.pyc", "*.egg-info", ".ruff_cache", ".pytest_cache")
TOP_IGNORED = ("build", "dist")  # only at the client's top level: a tag named "build" is a real package
DIFF_LINES = 40  # how much of a unified diff the drift summary shows
# The first line of every generated file, so a reader (and .gitattributes' linguist-generated, for review tools)
# knows not to edit it: the next `make openapi` would undo the edit, and `make check-openapi` fails on it.
GENERATED_NOTE = "Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand."
COMMENT_STYLES = {".md": ("<!-- ", " -->")}  # any other file the generator writes takes `#` comments


def build_spec() -> dict[str, Any]:
    """The schema the running API serves at /openapi.json."""
    from api.main import create_app

    return create_app().openapi()


def spec_text(spec: dict[str, Any]) -> str:
    """Deterministic serialization: sorted keys, 2-space indent, UTF-8 kept readable, final newline."""
    return json.dumps(spec, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def generator_input(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as openapi-python-client needs it: uploads marked ``format: binary``.

    FastAPI's OpenAPI 3.1 output describes ``UploadFile`` as ``contentMediaType: application/octet-stream``,
    which openapi-python-client 0.29 does not read (it would generate ``file: str`` and send no file;
    upstream PR openapi-generators/openapi-python-client#1418). Only the generator's copy is patched, so
    openapi.json stays exactly what the API serves.
    """
    patched = copy.deepcopy(spec)

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string" and node.get("contentMediaType") == "application/octet-stream":
                node.setdefault("format", "binary")
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(patched)
    return patched


def generate_client(spec: dict[str, Any], out_dir: Path) -> None:
    """Run openapi-python-client on ``spec`` into ``out_dir`` (replaced). Raises with its output on failure."""
    with tempfile.TemporaryDirectory(prefix="rft-openapi-") as tmp:
        spec_file = Path(tmp) / "openapi.json"
        spec_file.write_text(spec_text(generator_input(spec)), encoding="utf-8")
        target = Path(tmp) / "client"
        cmd = [
            str(BIN / "openapi-python-client"),
            "generate",
            "--path",
            str(spec_file),
            "--config",
            str(GENERATOR_CONFIG),
            "--meta",
            "setup",
            "--custom-template-path",
            str(TEMPLATES),
            "--output-path",
            str(target),
        ]
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}  # the venv's ruff hooks
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        output = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0 or not (target / "setup.py").is_file():
            raise RuntimeError(f"openapi-python-client failed ({proc.returncode}):\n{output}")
        if "Warning" in output or "WARNING" in output:
            print(output, file=sys.stderr)
        mark_generated(target)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        shutil.copytree(target, out_dir, ignore=shutil.ignore_patterns(*IGNORED))


def mark_generated(root: Path) -> None:
    """Put ``GENERATED_NOTE`` first in every file under ``root``, as a comment of the file's kind.

    Part of generation (after the generator's own ruff hooks), so ``write`` and ``check`` produce the same bytes.
    """
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if _ignored(path.relative_to(root)):
            continue
        start, end = COMMENT_STYLES.get(path.suffix, ("# ", ""))
        path.write_bytes(f"{start}{GENERATED_NOTE}{end}\n".encode() + path.read_bytes())


def _ignored(rel: Path) -> bool:
    top = bool(rel.parts) and rel.parts[0] in TOP_IGNORED
    return top or any(fnmatch.fnmatch(part, pat) for part in rel.parts for pat in IGNORED)


def tree_files(root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file under ``root`` that generation owns."""
    if not root.is_dir():
        return {}
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not _ignored(rel):
            out[rel.as_posix()] = path.read_bytes()
    return out


def sync_tree(src: Path, dst: Path) -> list[str]:
    """Make ``dst`` hold exactly ``src``'s files, writing only what changed (untouched files keep their mtime,
    so ``make`` and git see no change) and leaving build leftovers alone. Returns the paths touched."""
    new, old = tree_files(src), tree_files(dst)
    touched = []
    for rel, data in new.items():
        if old.get(rel) != data:
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            (dst / rel).write_bytes(data)
            touched.append(rel)
    for rel in sorted(set(old) - set(new)):
        (dst / rel).unlink()
        touched.append(rel)
    for folder in sorted((p for p in dst.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not _ignored(folder.relative_to(dst)) and not any(folder.iterdir()):
            folder.rmdir()
    return touched


def _unified(old: str, new: str, name: str) -> list[str]:
    lines = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), f"{name} (committed)", f"{name} (app)", n=1, lineterm=""
        )
    )
    more = len(lines) - DIFF_LINES
    return lines[:DIFF_LINES] + ([f"... {more} more diff lines"] if more > 0 else [])


def spec_drift(committed: str | None, spec: dict[str, Any], name: str = "openapi.json") -> list[str]:
    """What differs between the committed spec text and the app's spec; empty when they are equal."""
    built = spec_text(spec)
    if committed == built:
        return []
    if committed is None:
        return [f"{name}: missing"]
    try:
        old = json.loads(committed)
    except json.JSONDecodeError as exc:
        return [f"{name}: not valid JSON ({exc})"]
    out = [f"{name}: differs from create_app().openapi()"]
    for label, before, after in (
        ("path", old.get("paths", {}), spec.get("paths", {})),
        ("schema", old.get("components", {}).get("schemas", {}), spec.get("components", {}).get("schemas", {})),
    ):
        out += [f"  {label} added:   {k}" for k in sorted(set(after) - set(before))]
        out += [f"  {label} removed: {k}" for k in sorted(set(before) - set(after))]
        out += [f"  {label} changed: {k}" for k in sorted(set(before) & set(after)) if before[k] != after[k]]
    return out + _unified(committed, built, name)


def client_drift(committed_dir: Path, generated_dir: Path, name: str = "clients/python") -> list[str]:
    """Files added, removed or changed between the committed client and a fresh generation."""
    old, new = tree_files(committed_dir), tree_files(generated_dir)
    out = []
    shown = 0  # diffs of the first few changed files; the rest by name
    for rel in sorted(set(old) | set(new)):
        if rel not in old:
            out.append(f"{name}/{rel}: missing (the app's spec generates it)")
        elif rel not in new:
            out.append(f"{name}/{rel}: stale (no longer generated)")
        elif old[rel] != new[rel]:
            out.append(f"{name}/{rel}: changed")
            if shown < 3:
                out += _unified(old[rel].decode(errors="replace"), new[rel].decode(errors="replace"), rel)[:12]
                shown += 1
    return ([f"{name}: differs from a fresh generation"] if out else []) + out


def write(spec_path: Path, client_dir: Path) -> None:
    spec = build_spec()
    text = spec_text(spec)
    old = spec_path.read_text(encoding="utf-8") if spec_path.exists() else None
    if old != text:
        spec_path.write_text(text, encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="rft-client-") as tmp:
        generate_client(spec, Path(tmp) / "client")
        touched = sync_tree(Path(tmp) / "client", client_dir)
    print(f"{spec_path.name}: {'updated' if old != text else 'unchanged'} ({len(spec['paths'])} paths)")
    print(f"{client_dir}: {len(touched)} file(s) updated" + (f": {', '.join(touched[:10])}" if touched else ""))


def check(spec_path: Path, client_dir: Path) -> int:
    spec = build_spec()
    committed = spec_path.read_text(encoding="utf-8") if spec_path.exists() else None
    problems = spec_drift(committed, spec, spec_path.name)
    with tempfile.TemporaryDirectory(prefix="rft-client-") as tmp:
        generate_client(spec, Path(tmp) / "client")
        problems += client_drift(client_dir, Path(tmp) / "client", os.path.relpath(client_dir, ROOT))
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print("\nopenapi.json / clients/python are out of date with the app: run `make openapi`.", file=sys.stderr)
        return 1
    print(f"openapi.json and {client_dir.name} client match the app ({len(spec['paths'])} paths)")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["write", "check"])
    ap.add_argument("--spec", type=Path, default=SPEC_PATH)
    ap.add_argument("--client-dir", type=Path, default=CLIENT_DIR)
    args = ap.parse_args(argv)
    if args.command == "write":
        write(args.spec, args.client_dir)
        return 0
    return check(args.spec, args.client_dir)


if __name__ == "__main__":
    sys.exit(main())
