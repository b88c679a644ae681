"""The training API driven by the official ``tinker`` SDK (pinned in pyproject.toml), unmodified: only ``base_url``
and the key are set. Real processes on real services: the API, a Celery worker holding each session's models,
Postgres, Redis and moto's S3, on the tiny random model (the guide's loop on the demo model:
tests/integration/test_training_api_guide.py).

The SDK is synchronous here (``.result()`` on its futures): each call goes through its HTTP layer, the
``retrieve_future`` long poll and the protobuf it decodes, exactly as a user's script does.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import tinker
import torch
from tinker import types

from tests.integration.stack import Stack, production_env, running_api
from tests.services import fresh_database, leased_redis_db
from tests.tiny_model import TINY_ID

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@dataclass
class Service:
    stack: Stack
    key_a: str
    key_b: str

    def client(self, key: str | None = None) -> tinker.ServiceClient:
        return tinker.ServiceClient(base_url=self.stack.url, api_key=f"tml-{key or self.key_a}")


@pytest.fixture(scope="module")
def service(
    s3: dict[str, str], catalog_dir: Path, logs_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    """Its own database and worker: a session holds the worker for as long as it lives, and one test kills it."""
    os.environ.setdefault("TINKER_TELEMETRY", "0")
    with fresh_database() as pg_url, leased_redis_db() as broker:
        env = production_env(pg_url, broker, s3, catalog_dir, tmp_path_factory.mktemp("state"))
        env |= {"TRAINING_LEASE_SECONDS": "6", "TRAINING_IDLE_TIMEOUT_SECONDS": "120", "TINKER_TELEMETRY": "0"}
        with running_api(env, logs_dir) as stack:
            keys = [stack.project_key(name)[1] for name in ("team-a", "team-b")]
            stack.start_worker()
            yield Service(stack, *keys)


@pytest.fixture
def connect(service: Service) -> Iterator[Callable[..., tinker.ServiceClient]]:
    """ServiceClients closed when the test ends, as a ``with`` block would: a session holds its worker until its
    client closes it (or goes quiet), and the next test's session waits for that worker."""
    made: list[tinker.ServiceClient] = []

    def make(key: str | None = None) -> tinker.ServiceClient:
        made.append(service.client(key))
        return made[-1]

    yield make
    for sc in made:
        with contextlib.suppress(Exception):
            sc.close("success").result(timeout=30)


def datum(tokens: list[int], prompt_len: int) -> types.Datum:
    """Next-token aligned: position i predicts tokens[i + 1]; the prompt's positions carry no weight."""
    inputs, targets = tokens[:-1], tokens[1:]
    weights = [0.0 if i < prompt_len - 1 else 1.0 for i in range(len(targets))]
    return types.Datum(
        model_input=types.ModelInput.from_ints(inputs),
        loss_fn_inputs={"target_tokens": targets, "weights": weights},
    )


# token ids of the tiny model's character vocabulary (tests/tiny_model.py: "<eos>" 0, "<bos>" 1, then the digits)
SFT = [datum([1, 3, 13, 3, 14, 4, 0], 4), datum([1, 4, 13, 4, 14, 6, 0], 4)]
ADAM = types.AdamParams(learning_rate=1e-2)


def step(client: tinker.TrainingClient, data: list[types.Datum], loss_fn: str = "cross_entropy") -> float:
    fb = client.forward_backward(data, loss_fn)
    client.optim_step(ADAM).result()
    return float(fb.result().metrics["loss:sum"])


def test_a_supervised_loop_lowers_the_loss_and_a_saved_state_continues_bit_exactly(
    service: Service, connect: Callable[..., tinker.ServiceClient]
) -> None:
    sc = connect()
    caps = (
        tinker.RestClient(base_url=service.stack.url, api_key=f"tml-{service.key_a}").get_server_capabilities().result()
    )
    assert TINY_ID in [m.model_name for m in caps.supported_models]
    tc = sc.create_lora_training_client(base_model=TINY_ID, rank=8, seed=3).result()
    assert tc.get_info().model_data.model_name == TINY_ID
    losses = [step(tc, SFT) for _ in range(10)]
    # the tiny model's small random head keeps every logit near 0 (about 4.1 nats a token at best, ln 77 = 4.3 at
    # its start), so a fall of one nat over the 6 weighted tokens is most of what it can learn
    assert losses[-1] < losses[0] - 1.0, losses

    saved = tc.save_state("after-10").result().path
    assert saved.endswith("/weights/after-10")
    restored = sc.create_training_client_from_state_with_optimizer(saved).result()
    # the same next step in both: the restored client has the same weights and the same Adam moments
    assert step(tc, SFT) == step(restored, SFT)
    a = tc.forward(SFT, "cross_entropy").result()
    b = restored.forward(SFT, "cross_entropy").result()
    for x, y in zip(a.loss_fn_outputs, b.loss_fn_outputs, strict=True):
        assert x["logprobs"].tolist() == y["logprobs"].tolist()
    rest = tinker.RestClient(base_url=service.stack.url, api_key=f"tml-{service.key_a}")
    assert [c.tinker_path for c in rest.list_checkpoints(tc.model_id).result().checkpoints] == [saved]
    info = rest.get_weights_info_by_tinker_path(saved).result()
    assert info.base_model == TINY_ID and info.lora_rank == 8

    # load_state (weights only) into a client that trained on: its forward is the saved weights' again
    before = restored.forward(SFT, "cross_entropy").result()
    tc.load_state(saved).result()
    again = tc.forward(SFT, "cross_entropy").result()
    first = sc.create_training_client_from_state(saved).result().forward(SFT, "cross_entropy").result()
    assert [o["logprobs"].tolist() for o in again.loss_fn_outputs] == [
        o["logprobs"].tolist() for o in first.loss_fn_outputs
    ]
    assert again.metrics["loss:sum"] != before.metrics["loss:sum"]

    # a custom loss runs on two cross_entropy calls (the SDK's forward_backward_custom), weights negative included
    def mean_logprob(data: list[types.Datum], logprobs: list[torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        loss = -torch.stack([lp.mean() for lp in logprobs]).mean()
        return loss, {"custom:mean": float(loss.detach())}

    custom = tc.forward_backward_custom(SFT, mean_logprob).result()
    assert "custom:mean" in custom.metrics
    tc.optim_step(ADAM).result()

    # what the dashboard draws: one row per step, the loss of its calls
    rows = httpx.get(
        f"{service.stack.url}/v1/training_runs/{tc.model_id}/metrics",
        headers={"Authorization": f"Bearer {service.key_a}"},
    ).json()["data"]
    assert [r["step"] for r in rows] == list(range(1, 13))  # 10 + the step checked against the restored + 1
    assert rows[0]["loss"] == pytest.approx(losses[0]) and rows[9]["loss"] == pytest.approx(losses[9])
    rest.delete_checkpoint(tc.model_id, "weights/after-10").result()
    assert rest.list_checkpoints(tc.model_id).result().checkpoints == []


def rest(service: Service, key: str | None = None) -> tinker.RestClient:
    return tinker.RestClient(base_url=service.stack.url, api_key=f"tml-{key or service.key_a}")


def test_sampling_clients_and_the_policy_gradient_losses(
    service: Service, connect: Callable[..., tinker.ServiceClient]
) -> None:
    sc = connect()
    tc = sc.create_lora_training_client(base_model=TINY_ID, rank=4, seed=0).result()
    prompt = types.ModelInput.from_ints([1, 3, 13, 3, 14])
    params = types.SamplingParams(max_tokens=6, temperature=1.0, seed=7)
    live = tc.save_weights_and_get_sampling_client().result()
    out = live.sample(prompt=prompt, num_samples=4, sampling_params=params).result()
    assert len(out.sequences) == 4
    for seq in out.sequences:
        assert 1 <= len(seq.tokens) <= 6 and len(seq.logprobs) == len(seq.tokens)
        assert seq.stop_reason in ("stop", "length")
    again = live.sample(prompt=prompt, num_samples=4, sampling_params=params).result()
    assert [s.tokens for s in again.sequences] == [s.tokens for s in out.sequences]  # a seed draws the same

    # an importance-sampling step on the group, advantages centred per group; then ppo on the same data
    rewards = [float(len(s.tokens)) for s in out.sequences]
    mean = sum(rewards) / len(rewards)
    data = []
    for seq, r in zip(out.sequences, rewards, strict=True):
        tokens = prompt.to_ints() + seq.tokens
        n = len(prompt.to_ints())
        data.append(
            types.Datum(
                model_input=types.ModelInput.from_ints(tokens[:-1]),
                loss_fn_inputs={
                    "target_tokens": tokens[1:],
                    "logprobs": [0.0] * (n - 1) + seq.logprobs,
                    "advantages": [0.0] * (n - 1) + [r - mean] * len(seq.tokens),
                },
            )
        )
    fb = tc.forward_backward(data, "importance_sampling").result()
    # the sampler samples the trainer's weights: the ratio on the sampled tokens starts at 1, up to the rounding
    # of the precision "auto" picks (bf16 on most CPUs: about 1e-3 here; fp32: 5e-7)
    for seq, row in zip(out.sequences, fb.loss_fn_outputs, strict=True):
        got = row["logprobs"].tolist()[-len(seq.tokens) :]
        assert max(abs(a - b) for a, b in zip(got, seq.logprobs, strict=True)) < 0.02
    tc.optim_step(ADAM).result()
    ppo = tc.forward_backward(data, "ppo", {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1}).result()
    assert "loss:sum" in ppo.metrics
    # cispo and gspo as the SDK names them, on advantages ±1 (the lengths above may all tie); gspo with a
    # sequence_ratio_mask on one datum (its float32 wire key): the datum's sampled tokens
    n_prompt = len(prompt.to_ints()) - 1
    signed = []
    for i, d in enumerate(data):
        sign = 1.0 if i % 2 == 0 else -1.0
        inputs = {**d.loss_fn_inputs, "advantages": [0.0] * n_prompt + [sign] * (d.model_input.length - n_prompt)}
        if i == 0:
            inputs["sequence_ratio_mask"] = [0.0] * n_prompt + [1.0] * (d.model_input.length - n_prompt)
        signed.append(types.Datum(model_input=d.model_input, loss_fn_inputs=inputs))
    sampled_tokens = float(sum(len(seq.tokens) for seq in out.sequences))
    gspo = tc.forward_backward(signed, "gspo", {"clip_low_threshold": 0.5, "clip_high_threshold": 2.0}).result()
    assert gspo.metrics["tokens:sum"] == sampled_tokens and 0.5 < gspo.metrics["ratio:mean"] < 2.0
    cispo = tc.forward_backward([d for d in signed[1:]], "cispo").result()
    assert cispo.metrics["tokens:sum"] > 0 and 0.0 <= cispo.metrics["clip_fraction:mean"] <= 1.0
    tc.optim_step(ADAM).result()

    # a named sampler checkpoint and a sampling client on it, then on the base model; prompt log-probs
    path = tc.save_weights_for_sampler("first").result().path
    assert path.endswith("/sampler_weights/first")
    named = sc.create_sampling_client(model_path=path).result()
    stopped = named.sample(
        prompt=prompt,
        num_samples=2,
        sampling_params=types.SamplingParams(max_tokens=8, temperature=1.0, seed=1, stop=[3]),
    ).result()
    for seq in stopped.sequences:
        assert seq.stop_reason == "length" or seq.tokens[-1] in (0, 3)
    base = sc.create_sampling_client(base_model=TINY_ID).result()
    logprobs = base.compute_logprobs(prompt).result()
    assert logprobs[0] is None and len(logprobs) == 5 and all(x is not None and x < 0 for x in logprobs[1:])
    listed = {c.tinker_path for c in rest(service).list_checkpoints(tc.model_id).result().checkpoints}
    assert listed == {path}
    # downloaded by its id as a job's adapter is (a 302 to S3 here): a PEFT adapter
    ckpt = httpx.get(f"{service.stack.url}/api/v1/checkpoints", headers={"X-API-Key": f"tml-{service.key_a}"})
    ckpt_id = next(c["id"] for c in ckpt.json()["checkpoints"] if c["tinker_path"] == path)
    tar = httpx.get(
        f"{service.stack.url}/v1/training_runs/{tc.model_id}/checkpoints/{ckpt_id}/content",
        headers={"Authorization": f"Bearer {service.key_a}"},
        follow_redirects=True,
    )
    assert tar.status_code == 200, tar.text
    with tarfile.open(fileobj=io.BytesIO(tar.content)) as archive:
        assert {"adapter_config.json", "adapter_model.safetensors"} <= set(archive.getnames())


def test_concurrent_samples_of_one_session_share_a_decode(
    service: Service, connect: Callable[..., tinker.ServiceClient]
) -> None:
    """Sample calls a client sends without waiting (an RL loop's one call per problem) queue behind a long one and
    are decoded together: fewer decode passes than calls (each request's result says how many shared its decode),
    every call still its own samples."""
    import sqlalchemy as sa

    sc = connect()
    tc = sc.create_lora_training_client(base_model=TINY_ID, rank=4, seed=0).result()
    live = tc.save_weights_and_get_sampling_client().result()
    long = live.sample(
        prompt=types.ModelInput.from_ints([1, 3]),
        num_samples=64,
        sampling_params=types.SamplingParams(max_tokens=250, temperature=1.0),
    )
    prompts = [[1, 3, 13], [1, 4, 13, 4], [1, 5], [1, 6, 13, 6, 14], [1, 7, 13], [1, 8]]
    futures = [
        live.sample(
            prompt=types.ModelInput.from_ints(p),
            num_samples=2,
            sampling_params=types.SamplingParams(max_tokens=4 + i, temperature=1.0),
        )
        for i, p in enumerate(prompts)
    ]
    assert len(long.result().sequences) == 64
    outs = [f.result() for f in futures]
    for i, out in enumerate(outs):
        assert len(out.sequences) == 2
        assert all(1 <= len(seq.tokens) <= 4 + i and len(seq.logprobs) == len(seq.tokens) for seq in out.sequences)
    session_id = tc.model_id.rsplit(":train:", 1)[0]
    engine = sa.create_engine(service.stack.env["DATABASE_URL"])
    try:
        with engine.connect() as db:
            rows = db.execute(
                sa.text("SELECT result FROM training_requests WHERE session_id = :s AND kind = 'sample' ORDER BY seq"),
                {"s": session_id},
            ).all()
    finally:
        engine.dispose()
    shared = [int(r.result["decoded_with"]) for r in rows[-len(prompts) :]]
    decodes = sum(1 / k for k in shared)  # a decode shared by k calls counts 1/k on each
    assert round(decodes) < len(prompts), shared
    assert max(shared) > 1


def test_bad_input_is_a_clear_4xx_through_the_sdks_own_exceptions(
    service: Service, connect: Callable[..., tinker.ServiceClient]
) -> None:
    sc = connect()
    with pytest.raises(tinker.BadRequestError, match="not registered"):
        sc.create_lora_training_client(base_model="no-such-model", rank=4).result()
    tc = sc.create_lora_training_client(base_model=TINY_ID, rank=4).result()
    with pytest.raises(tinker.BadRequestError, match="dro"):
        tc.forward_backward(SFT, "dro").result()
    short = types.Datum(
        model_input=types.ModelInput.from_ints([1, 3, 13]),
        loss_fn_inputs={"target_tokens": [3, 13], "weights": [1.0, 1.0]},
    )
    with pytest.raises(tinker.BadRequestError, match=r"data\[0\]\.loss_fn_inputs\.target_tokens"):
        tc.forward_backward([short], "cross_entropy").result()
    missing = types.Datum(model_input=types.ModelInput.from_ints([1, 3]), loss_fn_inputs={"target_tokens": [3, 13]})
    with pytest.raises(tinker.BadRequestError, match="advantages"):
        tc.forward_backward([missing], "importance_sampling").result()
    sampler = sc.create_sampling_client(base_model=TINY_ID).result()
    with pytest.raises(tinker.BadRequestError, match="top_k"):
        sampler.sample(
            prompt=types.ModelInput.from_ints([1, 3]),
            num_samples=1,
            sampling_params=types.SamplingParams(max_tokens=2, top_k=5),
        ).result()
    # a token id beyond the vocabulary is found by the worker: the future fails as the user's error
    beyond = types.Datum(
        model_input=types.ModelInput.from_ints([1, 10_000]),
        loss_fn_inputs={"target_tokens": [3, 4], "weights": [1.0, 1.0]},
    )
    with pytest.raises(tinker.RequestFailedError, match="10000") as failed:
        tc.forward_backward([beyond], "cross_entropy").result()
    assert failed.value.category == "user"
    assert step(tc, SFT) > 0  # the session goes on

    # closed by another process of the user's (the same key): the SDK's next call is refused, saying why
    session_id = tc.model_id.split(":")[0]
    closed = httpx.post(
        f"{service.stack.url}/api/v1/sessions/{session_id}/finish",
        json={"reason": {"type": "success"}},
        headers={"X-API-Key": f"tml-{service.key_a}"},
    )
    assert closed.json()["status"] == "finished", closed.text
    with pytest.raises(tinker.BadRequestError, match="finished"):
        tc.forward_backward(SFT, "cross_entropy").result()


def test_another_projects_key_sees_nothing(service: Service, connect: Callable[..., tinker.ServiceClient]) -> None:
    mine = connect()
    tc = mine.create_lora_training_client(base_model=TINY_ID, rank=4).result()
    path = tc.save_state("private").result().path
    sampler_path = tc.save_weights_for_sampler("private").result().path
    theirs = connect(service.key_b)
    with pytest.raises(tinker.NotFoundError):
        theirs.create_training_client_from_state(path).result()
    with pytest.raises(tinker.NotFoundError):
        theirs.create_sampling_client(model_path=sampler_path).result().sample(
            prompt=types.ModelInput.from_ints([1]), num_samples=1, sampling_params=types.SamplingParams(max_tokens=1)
        ).result()
    other = rest(service, service.key_b)
    assert tc.model_id not in [r.training_run_id for r in other.list_training_runs().result().training_runs]
    assert other.list_user_checkpoints().result().checkpoints == []
    with pytest.raises(tinker.NotFoundError):
        other.list_checkpoints(tc.model_id).result()
    with pytest.raises(tinker.NotFoundError):
        other.get_training_run(tc.model_id).result()


def test_a_worker_killed_mid_session_fails_its_futures_and_never_hangs_the_client(
    service: Service, connect: Callable[..., tinker.ServiceClient]
) -> None:
    sc = connect()
    tc = sc.create_lora_training_client(base_model=TINY_ID, rank=4).result()
    assert step(tc, SFT) > 0
    for pid in service.stack.training_pids():  # the Celery pool process holding the session's models
        os.kill(pid, signal.SIGKILL)
    started = time.monotonic()
    with pytest.raises(tinker.RequestFailedError, match=r"lost|stopped") as failed:
        tc.forward_backward(SFT, "cross_entropy").result(timeout=120)
    assert failed.value.category == "server"
    assert time.monotonic() - started < 60  # the lease (6 s here) and a reaper pass, not the client's timeout
    with pytest.raises(tinker.BadRequestError, match="lost"):
        tc.forward_backward(SFT, "cross_entropy").result()
    # a new session on a worker trains again
    fresh = connect().create_lora_training_client(base_model=TINY_ID, rank=4).result()
    assert step(fresh, SFT) > 0
