"""Training-API sessions pooled on one worker process (worker.training_api.pool, grpo_core.training_api.shared),
driven by the official ``tinker`` SDK on the real stack: the API, Postgres, Redis, moto's S3 and one Celery worker
(concurrency 1) with POOL_TENANTS=2.

Two projects' sessions train one run each at the same time on the one worker: the second session could not be
served before the first closes unless the worker pools them. Each run's losses and final log-probs are bit-identical
(fp32) to the same run trained later alone on the same worker; each session is billed the seconds its requests held
the device, not the wall clock they shared."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
import tinker
from tinker import types

from tests.integration.stack import Stack, production_env, running_api
from tests.services import fresh_database, fresh_redis_db
from tests.tiny_model import TINY_ID

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ADAM = types.AdamParams(learning_rate=1e-2)
STEPS = 4


def datum(tokens: list[int]) -> types.Datum:
    inputs, targets = tokens[:-1], tokens[1:]
    weights = [0.0] + [1.0] * (len(targets) - 1)
    return types.Datum(
        model_input=types.ModelInput.from_ints(inputs), loss_fn_inputs={"target_tokens": targets, "weights": weights}
    )


DATA = {
    "a": [datum([1, 3, 13, 3, 14, 4, 0]), datum([1, 4, 13, 4, 14, 6, 0])],
    "b": [datum([1, 5, 13, 5, 14, 8, 0]), datum([1, 9, 9, 13, 2, 0])],
}


@pytest.fixture(scope="module")
def stack(
    s3: dict[str, str], catalog_dir: Path, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Stack, dict[str, str]]]:
    os.environ.setdefault("TINKER_TELEMETRY", "0")
    with fresh_database() as pg_url:
        env = production_env(pg_url, fresh_redis_db(), s3, catalog_dir, tmp_path_factory.mktemp("state"))
        env |= {"POOL_TENANTS": "2", "TRAINING_IDLE_TIMEOUT_SECONDS": "120", "TINKER_TELEMETRY": "0"}
        with running_api(env, logs_dir) as s:
            keys = {name: s.project_key(name)[1] for name in ("team-a", "team-b")}
            s.start_worker()
            yield s, keys


class Trainer:
    """One session and its training run, stepped a call at a time."""

    def __init__(self, s: Stack, key: str, seed: int, data: list[types.Datum]) -> None:
        self.sc = tinker.ServiceClient(base_url=s.url, api_key=f"tml-{key}")
        self.tc = self.sc.create_lora_training_client(base_model=TINY_ID, rank=8, seed=seed).result(timeout=120)
        self.data = data
        self.losses: list[float] = []

    @property
    def session_id(self) -> str:
        return self.tc.model_id.rsplit(":train:", 1)[0]

    def step(self) -> None:
        fb = self.tc.forward_backward(self.data, "cross_entropy")
        self.tc.optim_step(ADAM).result(timeout=120)
        self.losses.append(float(fb.result(timeout=120).metrics["loss:sum"]))

    def logprobs(self) -> list[list[float]]:
        out = self.tc.forward(self.data, "cross_entropy").result(timeout=120)
        return [x["logprobs"].tolist() for x in out.loss_fn_outputs]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.sc.close("success").result(timeout=30)


def sessions(s: Stack, ids: list[str]) -> dict[str, sa.Row[tuple[str, str, bool, float]]]:
    engine = sa.create_engine(s.env["DATABASE_URL"])
    try:
        with engine.connect() as db:
            rows = db.execute(
                sa.text(
                    "SELECT s.id, s.worker_id, u.shared, u.device_seconds FROM training_sessions s "
                    "JOIN usage_records u ON u.subject_id = s.id AND u.kind = 'session' WHERE s.id = ANY(:ids)"
                ),
                {"ids": ids},
            ).all()
    finally:
        engine.dispose()
    return {r.id: r for r in rows}


def test_two_sessions_share_one_worker_and_each_run_trains_as_alone(stack: tuple[Stack, dict[str, str]]) -> None:
    s, keys = stack
    started = time.monotonic()
    a = Trainer(s, keys["team-a"], 3, DATA["a"])
    b = Trainer(s, keys["team-b"], 4, DATA["b"])  # served while a holds the worker: only a pool can
    try:
        for _ in range(STEPS):
            a.step()
            b.step()
        pooled = {"a": (a.losses, a.logprobs()), "b": (b.losses, b.logprobs())}
        wall = time.monotonic() - started
    finally:
        a.close()
        b.close()
    rows = sessions(s, [a.session_id, b.session_id])
    assert rows[a.session_id].worker_id == rows[b.session_id].worker_id  # one worker process held both
    for row in rows.values():  # billed what its requests held, not the wall clock both shared
        assert row.shared and 0 < row.device_seconds < wall, (row, wall)
    assert pooled["a"][0][-1] < pooled["a"][0][0] and pooled["b"][0][-1] < pooled["b"][0][0]

    for name, seed, key in (("a", 3, "team-a"), ("b", 4, "team-b")):  # each run again, alone on the worker
        alone = Trainer(s, keys[key], seed, DATA[name])
        try:
            for _ in range(STEPS):
                alone.step()
            assert (alone.losses, alone.logprobs()) == pooled[name], name  # bit for bit
        finally:
            alone.close()
        row = sessions(s, [alone.session_id])[alone.session_id]
        assert row.shared  # its worker could have taken another session: it too is billed its requests' seconds
