"""The dashboard reads the metrics the API types: every field its charts, header and rollout viewer read from a
metrics event (StepMetrics, GraderMetrics, MemoryStats), a logged rollout (Sample) or the job (Job.execution:
Execution) exists in openapi.json, so renaming a field in grpo_core.schemas.metrics fails here instead of leaving a
chart or the header empty."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "api" / "dashboard" / "src"
SCHEMAS = json.loads((ROOT / "openapi.json").read_text())["components"]["schemas"]


def resolve(schema: str, path: str) -> bool:
    """Whether ``path`` (dotted) names a property of the named component schema, following $refs."""
    node: dict[str, Any] = SCHEMAS[schema]
    for part in path.split("."):
        props = node.get("properties", {})
        if part not in props:
            return False
        node = props[part]
        refs = [node.get("$ref")] + [alt.get("$ref") for alt in node.get("anyOf", [])]
        ref = next((r for r in refs if r), None)
        if ref is not None:
            node = SCHEMAS[ref.rsplit("/", 1)[-1]]
    return True


def read(name: str) -> str:
    return (SRC / name).read_text()


def test_the_chart_and_header_fields_are_step_metrics_fields() -> None:
    charts, job = read("charts.js"), read("job.js")
    paths = set(re.findall(r'col\(rows, "([\w.]+)"\)', charts))
    paths |= {f"scores.{f}" for f in re.findall(r"\bscores\??\.(\w+)", charts + job)}
    paths |= {f for f in re.findall(r"\be\.data\.(\w+)", job)} | {f for f in re.findall(r"\br\.(\w+)", charts)}
    paths |= {f"memory.{f}" for f in re.findall(r"\bmemory\??\.(\w+)", charts)}
    assert {"scores.train_reward_mean", "kl", "entropy", "clip_ratio", "step"} <= paths  # the scan reads them
    assert {"memory", "memory.peak_allocated_gb", "memory.device", "memory.device_total_gb"} <= paths
    missing = sorted(p for p in paths if not resolve("StepMetrics", p))
    assert not missing, f"the dashboard reads fields StepMetrics lacks: {missing}"
    grader_fields = set(re.findall(r"\bg\.(\w+)", charts))
    assert grader_fields >= {"name", "train_reward_mean"}
    assert all(resolve("GraderMetrics", f) for f in grader_fields), grader_fields


def test_the_execution_line_reads_execution_fields() -> None:
    """The job page's header line (job.js ``Execution({ ex })``) reads ``job.execution``, an ``Execution``."""
    job = read("job.js")
    assert "ex=${job.execution}" in job
    assert resolve("Job", "execution"), "Job.execution is missing from openapi.json: run `make openapi`"
    fields = set(re.findall(r"\bex\.(\w+)", job))
    shown = {"device", "device_name", "precision", "micro_batch_size", "gradient_checkpointing", "rollout_engine"}
    assert shown <= fields  # the scan reads them
    missing = sorted(f for f in fields if not resolve("Execution", f))
    assert not missing, f"the job header reads fields Execution lacks: {missing}"


def test_the_rollout_viewer_fields_are_sample_fields() -> None:
    fields = set(re.findall(r"\bs\.(\w+)", read("rollouts.js")))
    assert {"prompt", "completion", "reward", "rewards", "advantage"} <= fields
    missing = sorted(f for f in fields if not resolve("Sample", f))
    assert not missing, f"the rollout viewer reads fields Sample lacks: {missing}"
    # a multi-turn episode, span by span
    spans = set(re.findall(r"\bspan\.(\w+)", read("rollouts.js")))
    assert {"kind", "text", "tokens", "trained"} <= spans
    assert not sorted(f for f in spans if not resolve("TrajectorySpan", f))
    episode = set(re.findall(r"\bsample\.(\w+)", read("rollouts.js")))
    assert {"trajectory", "ended"} <= episode and all(resolve("Sample", f) for f in episode)


def test_a_renamed_field_is_caught() -> None:
    assert resolve("StepMetrics", "scores.valid_reward_mean") and not resolve("StepMetrics", "scores.valid_reward")
    assert resolve("StepMetrics", "memory.peak_allocated_gb") and not resolve("StepMetrics", "memory.peak_gb")


def test_the_usage_page_reads_usage_fields() -> None:
    """The usage page (usage.js) reads a bucket's counters by name (COLUMNS) and its labels; the job page reads
    ``job.usage``: each is a field of UsageBucket / UsagePage / JobUsage in openapi.json."""
    usage, job = read("usage.js"), read("job.js")
    counters = set(re.findall(r'\["[\w -]+", "(\w+)"', usage))
    assert {"device_seconds", "trained_tokens", "inference_tokens"} <= counters  # the scan reads them
    fields = counters | set(re.findall(r"\bbucket\.(\w+)", usage)) | set(re.findall(r"\bb\.(\w+)", usage))
    missing = sorted(f for f in fields if not resolve("UsageBucket", f))
    assert not missing, f"the usage page reads fields UsageBucket lacks: {missing}"
    page = set(re.findall(r"\bpage\??\.(\w+)", usage)) | {
        f"totals.{f}" for f in re.findall(r"\btotals\??\.(\w+)", usage)
    }
    assert {"data", "totals", "has_more", "totals.device_seconds_by_kind"} <= page
    assert not sorted(p for p in page if not resolve("UsagePage", p)), page
    used = set(re.findall(r"\bjob\.usage\??\.(\w+)", job))
    assert used == {"device_seconds", "cost"} and all(resolve("Job", f"usage.{f}") for f in used)
