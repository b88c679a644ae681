"""The body of ``POST /v1/fine_tuning/jobs`` from a job file and/or flags (pure functions, no I/O but reading).

A job file is the API's own body (JSON or YAML), or the short form with ``grader`` and ``hyperparameters`` at
the top level, which is what people write by hand. Flags win over the file; ``--hp a.b=v`` sets nested keys.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from rft_cli.api import CliError

METHOD_KEYS = ("grader", "hyperparameters")


def load_mapping(path: Path) -> dict[str, Any]:
    """A JSON or YAML object from a file (YAML by suffix; JSON is also valid YAML, so both work either way)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise CliError(f"{path} is not valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'}: {exc}") from exc
    if not isinstance(data, dict):
        raise CliError(f"{path} must hold an object (a mapping), not {type(data).__name__}")
    return data


def grader_from_file(path: Path, name: str | None = None) -> dict[str, Any]:
    """A grader spec: a ``.py`` file is a python grader (its ``grade(sample, item)``, named after the file unless
    ``name`` is given), anything else is the grader's JSON/YAML object (``{"type": "string_check", ...}``)."""
    if path.suffix == ".py":
        try:
            source = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc
        return {"type": "python", "name": name or path.stem, "source": source}
    grader = load_mapping(path)
    if "type" not in grader:
        raise CliError(f"{path}: a grader needs a 'type' (python, string_check, text_similarity, multi, ...)")
    return grader | ({"name": name} if name else {})


def parse_value(raw: str) -> Any:
    """``4`` -> 4, ``5e-4`` -> 0.0005, ``true`` -> True, ``null`` -> None, ``[1,2]`` -> list; else the string."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def parse_assignments(items: list[str], flag: str = "--hp") -> dict[str, Any]:
    """``["group_size=8", "lora.rank=16"]`` -> ``{"group_size": 8, "lora": {"rank": 16}}``."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"{flag} expects key=value, got {item!r}")
        node = out
        *parents, leaf = [p.strip() for p in key.split(".")]
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise CliError(f"{flag} {item!r}: {part} is already set to a value")
            node = child
        node[leaf] = parse_value(raw)
    return out


def parse_pairs(items: list[str], flag: str = "--metadata") -> dict[str, str]:
    """``["team=rl", "run.id=7"]`` -> ``{"team": "rl", "run.id": "7"}``: flat string values, as metadata is."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"{flag} expects key=value, got {item!r}")
        out[key.strip()] = value
    return out


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` wins; nested mappings merge key by key (so ``--hp lora.rank=8`` keeps the file's lora.alpha)."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def normalize(spec: dict[str, Any]) -> dict[str, Any]:
    """The short form (top-level ``grader`` / ``hyperparameters``) moved under ``method.reinforcement``."""
    body = copy.deepcopy(spec)
    short = {k: body.pop(k) for k in METHOD_KEYS if k in body}
    if short:
        method = body.setdefault("method", {"type": "reinforcement"})
        method.setdefault("type", "reinforcement")
        method["reinforcement"] = deep_merge(method.get("reinforcement") or {}, short)
    return body


def build_job_body(
    base: dict[str, Any] | None = None,
    *,
    model: str | None = None,
    training_file: str | None = None,
    validation_file: str | None = None,
    grader: dict[str, Any] | None = None,
    recipe: str | None = None,
    hyperparameters: dict[str, Any] | None = None,
    seed: int | None = None,
    suffix: str | None = None,
    metadata: dict[str, Any] | None = None,
    devices: int | None = None,
    nodes: int | None = None,
    rollout_devices: int | None = None,
) -> dict[str, Any]:
    """Merge a job file with flags into the API's body; refuse early what the API would refuse anyway."""
    body = normalize(base or {})
    top = {
        "model": model,
        "training_file": training_file,
        "validation_file": validation_file,
        "seed": seed,
        "suffix": suffix,
    }
    body.update({k: v for k, v in top.items() if v is not None})
    if metadata:
        body["metadata"] = {**(body.get("metadata") or {}), **{k: str(v) for k, v in metadata.items()}}
    asked = (("devices", devices), ("nodes", nodes), ("rollout_devices", rollout_devices))
    resources = {k: v for k, v in asked if v is not None}
    if resources:
        body["resources"] = {**(body.get("resources") or {}), **resources}
    method = body.setdefault("method", {"type": "reinforcement"})
    method.setdefault("type", "reinforcement")
    rl = method.setdefault("reinforcement", {})
    if grader is not None:
        rl["grader"] = grader
    hp = dict(hyperparameters or {})
    if recipe is not None:
        hp["recipe"] = recipe
    if hp:
        rl["hyperparameters"] = deep_merge(rl.get("hyperparameters") or {}, hp)
    missing = [
        name
        for name, present in (
            ("--model", body.get("model")),
            ("--training-file", body.get("training_file")),
            ("--grader", rl.get("grader")),
        )
        if not present
    ]
    if missing:
        raise CliError(f"missing {', '.join(missing)} (give the flag or set it in --file)")
    return body


def dropped_keys(sent: Any, kept: Any, prefix: str = "") -> list[str]:
    """Dotted paths present in ``sent`` but absent from ``kept``.

    The generated models drop keys their schema does not know (``additionalProperties: false``), so a typo such
    as ``--hp grop_size=4`` would otherwise vanish silently instead of being refused.
    """
    if not isinstance(sent, dict):
        return []
    if not isinstance(kept, dict):
        return [prefix] if prefix else []
    out: list[str] = []
    for key, value in sent.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if key not in kept:
            out.append(path)
        else:
            out += dropped_keys(value, kept[key], path)
    return out
