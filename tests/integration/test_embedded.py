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


def test_embedded_defaults_serve_the_training_api(catalog_dir: Path, tmp_path: Path, logs_dir: Path) -> None:
    """The tinker SDK against the embedded defaults (open mode: any ``tml-`` key): a session's calls through SQLite
    and the filesystem broker, a save in the local object store, a sample."""
    import tinker
    from tinker import types

    state = tmp_path / "state"
    state.mkdir()
    migrate(f"sqlite:///{state.resolve() / 'rft.db'}")
    stack = Stack({"STATE_DIR": str(state), "MODEL_CATALOG_DIR": str(catalog_dir), "TINKER_TELEMETRY": "0"}, logs_dir)
    try:
        stack.start_api()
        stack.start_worker()
        with tinker.ServiceClient(base_url=stack.url, api_key="tml-local") as service:
            training = service.create_lora_training_client(base_model="tiny-llama", rank=4).result()
            datum = types.Datum(
                model_input=types.ModelInput.from_ints([1, 3, 13, 3]),
                loss_fn_inputs={"target_tokens": [3, 13, 3, 14], "weights": [1.0, 1.0, 1.0, 1.0]},
            )
            losses = []
            for _ in range(3):
                fb = training.forward_backward([datum], "cross_entropy")
                training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
                losses.append(fb.result().metrics["loss:sum"])
            assert losses[-1] < losses[0], losses
            path = training.save_state("local").result().path
            sampler = training.save_weights_and_get_sampling_client().result()
            out = sampler.sample(types.ModelInput.from_ints([1, 3]), 2, types.SamplingParams(max_tokens=3)).result()
            assert len(out.sequences) == 2
        assert path.endswith("/weights/local") and list((state / "objects" / "projects").rglob("local.tar"))
    finally:
        stack.stop()
