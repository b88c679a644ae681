"""The same flow on the embedded defaults: SQLite, the filesystem Celery transport, a local object store."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.helpers import migrate
from tests.integration.flow import check_succeeded_job, submit
from tests.integration.stack import Stack, wait_status

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_embedded_defaults_run_a_job_end_to_end(catalog_dir: Path, tmp_path: Path, logs_dir: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    migrate(f"sqlite:///{state.resolve() / 'rft.db'}")
    stack = Stack({"STATE_DIR": str(state), "MODEL_CATALOG_DIR": str(catalog_dir)}, logs_dir)
    try:
        stack.start_api()
        stack.start_worker()
        with httpx.Client(base_url=stack.url, timeout=30) as api:
            job = submit(api, validation=True)
            done = wait_status(api, job["id"], {"succeeded", "failed", "cancelled"}, 300, stack)
            check_succeeded_job(api, done, catalog_dir / "tiny-llama", tmp_path)
        assert (state / "rft.db").is_file() and (state / "worker_token").is_file()
        project = done["organization_id"]  # the default project: no keys, open mode
        assert list((state / "objects" / "projects" / project / "jobs" / job["id"] / "checkpoints").glob("*.tar"))
    finally:
        stack.stop()
