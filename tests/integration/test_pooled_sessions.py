"""Training-API sessions pooled on one worker process (worker.training_api.pool, grpo_core.training_api.shared),
driven by the official ``tinker`` SDK on the real stack: the API, Postgres, Redis, moto's S3 and one Celery worker
(concurrency 1) with POOL_TENANTS=3, POOL_SAMPLE_TOGETHER on and TRAINING_PRECISION=fp32.

Three sessions of two projects train one run each at the same time on the one worker, their calls sent at once: the
later sessions could not be served before the first closes unless the worker pools them. Each step, a long decode of
the third run holds the device while the first two runs' forward_backward calls queue, so those calls share passes
(grpo_core.training_api.together; the worker's log says so). Each run's losses and final log-probs equal the same run
trained later alone on the same worker: within fp32 rounding, and bit for bit for the run created with
``user_metadata={"pool_exact": "true"}``. Each session is billed the seconds its requests held the device, not the
wall clock they shared."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
import tinker
from tinker import types

from tests.integration.stack import Stack, production_env, running_api
from tests.services import fresh_database, leased_redis_db
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
    "c": [datum([1, 6, 13, 6, 14, 12, 0])],
}
SEEDS = {"a": 3, "b": 4, "c": 5}
KEYS = {"a": "team-a", "b": "team-b", "c": "team-a"}
EXACT = {"c"}  # asks to compute alone (user_metadata pool_exact)
# A run whose calls shared passes, against the run alone, after STEPS steps in fp32: each call agrees within 1e-5
# (tests/unit/test_training_together.py); in runs here the runs ended within 1.1e-7 relative in a loss and 1e-6 in a
# log-prob, their calls of each step in shared passes. The bounds leave room for AdamW at eps 1e-12, which turns
# rounding in a near-zero gradient entry into a step of the full learning rate. (In bf16, which TRAINING_PRECISION
# auto picks on a CPU with fast bf16, the shared passes' rounding moved log-probs by up to 0.08 over these steps.)
LOSS_BOUND = 1e-4  # relative
LOGPROB_BOUND = 1e-3
# c's decode, which the other runs' calls queue behind: greedy, as the random model never picks EOS that way, to the
# model's 256 positions (about 0.5 s from the SDK's send to its answer here)
HOLD = types.SamplingParams(max_tokens=250, seed=7, temperature=0.0)


@contextmanager
def two_projects(
    s3: dict[str, str], catalog_dir: Path, logs_dir: Path, state: Path, settings: dict[str, str]
) -> Iterator[tuple[Stack, dict[str, str]]]:
    """A pool's stack: a database and a Redis db of its own, the API with the worker ``settings`` (sessions idle
    for up to 120 s, no telemetry), and a key of each of two projects; no worker yet."""
    os.environ.setdefault("TINKER_TELEMETRY", "0")
    with fresh_database() as pg_url, leased_redis_db() as broker:
        env = production_env(pg_url, broker, s3, catalog_dir, state)
        env |= {"TRAINING_IDLE_TIMEOUT_SECONDS": "120", "TINKER_TELEMETRY": "0", **settings}
        with running_api(env, logs_dir) as s:
            yield s, {name: s.project_key(name)[1] for name in ("team-a", "team-b")}


@pytest.fixture(scope="module")
def stack(
    s3: dict[str, str], catalog_dir: Path, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Stack, dict[str, str]]]:
    settings = {"POOL_TENANTS": "3", "POOL_SAMPLE_TOGETHER": "true", "TRAINING_PRECISION": "fp32"}
    with two_projects(s3, catalog_dir, logs_dir, tmp_path_factory.mktemp("state"), settings) as (s, keys):
        s.start_worker()
        yield s, keys


class Trainer:
    """One session and its training run, stepped a call at a time."""

    def __init__(self, s: Stack, keys: dict[str, str], name: str) -> None:
        self.sc = tinker.ServiceClient(base_url=s.url, api_key=f"tml-{keys[KEYS[name]]}")
        meta = {"pool_exact": "true"} if name in EXACT else None
        self.tc = self.sc.create_lora_training_client(
            base_model=TINY_ID, rank=8, seed=SEEDS[name], user_metadata=meta
        ).result(timeout=120)
        self.data = DATA[name]
        self.losses: list[float] = []

    @property
    def session_id(self) -> str:
        return self.tc.model_id.rsplit(":train:", 1)[0]

    def step(self) -> None:
        step_together([self])

    def logprobs(self) -> list[list[float]]:
        out = self.tc.forward(self.data, "cross_entropy").result(timeout=120)
        return [x["logprobs"].tolist() for x in out.loss_fn_outputs]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.sc.close("success").result(timeout=30)


def step_together(trainers: list[Trainer], hold: tinker.SamplingClient | None = None) -> None:
    """One step of each trainer, every forward_backward sent before any result is awaited; with ``hold``, after a
    long decode of that sampling client has taken the device, so the calls sent after it queue together."""
    decode = None
    if hold is not None:
        decode = hold.sample(types.ModelInput.from_ints([1, 3, 13]), num_samples=1, sampling_params=HOLD)
        time.sleep(0.1)  # the decode reaches the worker and takes the device first
    fbs = [t.tc.forward_backward(t.data, "cross_entropy") for t in trainers]
    steps = [t.tc.optim_step(ADAM) for t in trainers]
    for t, fb, step in zip(trainers, fbs, steps, strict=True):
        step.result(timeout=120)
        t.losses.append(float(fb.result(timeout=120).metrics["loss:sum"]))
    if decode is not None:
        decode.result(timeout=120)


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


def test_three_sessions_share_one_worker_and_each_run_trains_as_alone(stack: tuple[Stack, dict[str, str]]) -> None:
    s, keys = stack
    started = time.monotonic()
    trainers = {name: Trainer(s, keys, name) for name in DATA}  # served while a holds the worker: only a pool can
    try:
        hold = trainers["c"].tc.save_weights_and_get_sampling_client("hold").result(timeout=120)  # seeded: alone
        for _ in range(STEPS):
            step_together(list(trainers.values()), hold)
        pooled = {name: (t.losses, t.logprobs()) for name, t in trainers.items()}
        wall = time.monotonic() - started
    finally:
        for t in trainers.values():
            t.close()
    rows = sessions(s, [t.session_id for t in trainers.values()])
    assert len({row.worker_id for row in rows.values()}) == 1  # one worker process held them all
    for row in rows.values():  # billed what its requests held, not the wall clock they shared
        assert row.shared and 0 < row.device_seconds < wall, (row, wall)
    for losses, _ in pooled.values():
        assert losses[-1] < losses[0]
    said = (s.log_dir / "worker.log").read_text(errors="replace")
    assert said.count("forward_backward calls of 2 runs in shared passes") >= STEPS // 2, said[-3000:]

    for name in DATA:  # each run again, alone on the worker
        alone = Trainer(s, keys, name)
        try:
            for _ in range(STEPS):
                alone.step()
            if name in EXACT:
                assert (alone.losses, alone.logprobs()) == pooled[name], name  # bit for bit
            else:
                assert alone.losses == pytest.approx(pooled[name][0], rel=LOSS_BOUND), name
                for x, y in zip(alone.logprobs(), pooled[name][1], strict=True):
                    assert x == pytest.approx(y, abs=LOGPROB_BOUND), name
        finally:
            alone.close()
        row = sessions(s, [alone.session_id])[alone.session_id]
        assert row.shared  # its worker could have taken another session: it too is billed its requests' seconds
