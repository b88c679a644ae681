"""MkDocs hook: the CLI reference, rendered from the ``rft`` command itself at every build.

``docs/cli.md`` holds ``MARKER``; this hook replaces it with what typer's own docs generator
(``python -m typer rft_cli.main utils docs``) prints for the whole command tree, its headings one level down under
the page's title. It runs in a subprocess with this checkout and its generated client (``clients/python``) first
on the path, so the page documents the code being built, not whatever version is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

MARKER = "<!-- rft-cli-reference -->"
ROOT = Path(__file__).resolve().parents[2]


def render_cli() -> str:
    """The ``rft`` command tree as Markdown, headings from ``##`` down."""
    path = [str(ROOT), str(ROOT / "clients" / "python"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    cmd = [sys.executable, "-m", "typer", "rft_cli.main", "utils", "docs", "--name", "rft"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.startswith("# "):
        raise PluginError(f"the CLI reference could not be rendered ({' '.join(cmd[1:])}):\n{proc.stderr}")
    lines, fenced = [], False
    for line in proc.stdout.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        lines.append("#" + line if line.startswith("#") and not fenced else line)
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return markdown.replace(MARKER, render_cli()) if MARKER in markdown else markdown
