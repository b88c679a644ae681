"""The pieces of data-parallel GRPO that need no second process: shares, the micro-batch plan, batch-independent
sampling noise. (Two real processes on gloo: tests/distributed.)"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import torch

from grpo_core.hardware.distributed import World, all_reduce_sum_, reduce_sums
from grpo_core.rollout.batch import Rollout
from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.engines.noise import row_uniforms
from grpo_core.schemas.config import GRPOConfig
from grpo_core.update.step import plan_micro_batches


@pytest.mark.parametrize(("n", "size"), [(8, 2), (7, 2), (5, 3), (3, 3), (16, 8)])
def test_shards_are_contiguous_cover_everything_and_differ_by_at_most_one(n: int, size: int) -> None:
    shares = [World(rank=r, size=size).shard(n) for r in range(size)]
    assert shares[0][0] == 0 and shares[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(shares))
    lengths = [hi - lo for lo, hi in shares]
    assert max(lengths) - min(lengths) <= 1 and min(lengths) >= 1


def test_world_of_one_is_the_default_and_its_collectives_are_the_identity() -> None:
    world = World.from_env()
    assert (world.rank, world.size, world.is_main, world.distributed) == (0, 1, True, False)
    grad = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    assert all_reduce_sum_(world, [grad]) == 24  # 3 fp64 values: the bytes a rank would send
    assert torch.equal(grad, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    assert reduce_sums(world, {"loss": 1.5, "x_max": 2.0}, torch.device("cpu")) == {"loss": 1.5, "x_max": 2.0}


def test_row_uniforms_depend_on_seed_row_and_token_only() -> None:
    whole = row_uniforms(5, torch.arange(0, 64), 3)
    part = row_uniforms(5, torch.arange(32, 64), 3)
    assert torch.equal(whole[32:], part)  # the same row draws the same number in any batch
    assert not torch.equal(row_uniforms(5, torch.arange(64), 4), whole)  # another token
    assert not torch.equal(row_uniforms(6, torch.arange(64), 3), whole)  # another seed
    u = row_uniforms(1, torch.arange(200_000), 0)
    assert float(u.min()) >= 0.0 and float(u.max()) < 1.0
    assert abs(float(u.mean()) - 0.5) < 0.005 and abs(float(u.std()) - (1 / 12) ** 0.5) < 0.005


def _rollout(lengths: list[int], width: int = 6) -> Rollout:
    n = len(lengths)
    cmask = torch.tensor([[1] * k + [0] * (width - k) for k in lengths])
    ids = torch.ones(n, width, dtype=torch.long)
    return Rollout(
        ids[:, :2], torch.ones(n, 2, dtype=torch.long), ids, cmask, torch.zeros(n, dtype=torch.bool), [""] * n
    )


@pytest.mark.parametrize(
    "hp",
    [
        {"loss_aggregation": "seq_mean_token_mean"},
        {"loss_aggregation": "token_mean", "beta": 0.04},
        {"loss_aggregation": "bnpo"},
        {"top_entropy_quantile": 0.2},
    ],
)
@pytest.mark.parametrize("size", [2, 3])
def test_the_ranks_micro_batches_partition_the_one_process_plan(hp: dict[str, object], size: int) -> None:
    """Every row one process would update is updated by exactly one rank, under the same global counts; where the
    composition of a micro-batch matters (bnpo, the top-entropy mask) the micro-batches are one process's."""
    cfg = GRPOConfig.model_validate({"micro_batch_size": 3, **hp})
    ro = _rollout([3, 0, 5, 2, 6, 1, 4, 2, 3, 5, 1, 6])
    adv = torch.tensor([1.0, 0.5, 0.0, -1.0, 2.0, 0.0, 1.0, -0.5, 0.3, 0.0, 1.0, -2.0])
    one, step_one = plan_micro_batches(ro, adv, cfg, World())
    ranks = [plan_micro_batches(ro, adv, cfg, World(rank=r, size=size)) for r in range(size)]
    assert all(step == step_one for _, step in ranks) or cfg.loss_aggregation != "bnpo"
    assert all(step.n_sequences == step_one.n_sequences and step.n_tokens == step_one.n_tokens for _, step in ranks)
    rows = sorted(int(i) for batches, _ in ranks for b in batches for i in b)
    assert rows == sorted(int(i) for b in one for i in b)
    if cfg.loss_aggregation == "bnpo" or cfg.top_entropy_quantile < 1.0:
        dealt = sorted((tuple(b.tolist()) for batches, _ in ranks for b in batches))
        assert dealt == sorted(tuple(b.tolist()) for b in one)
    assert all(batches for batches, _ in ranks)  # every rank has work
    if cfg.loss_aggregation != "bnpo" and cfg.top_entropy_quantile == 1.0:  # and the same share of it
        counts = [len(batches) for batches, _ in ranks]
        assert max(counts) == min(counts), counts
        assert all(len(b) <= cfg.micro_batch for batches, _ in ranks for b in batches)


def test_a_collectives_failure_is_a_lost_peer_unless_this_rank_ran_out_of_memory() -> None:
    from grpo_core.errors import PeerLost
    from grpo_core.hardware.distributed import _collective

    lost = pytest.raises(PeerLost, match="all_reduce failed: another rank of the job is gone")
    with lost, _collective("all_reduce"):
        raise RuntimeError("Connection closed by peer [127.0.0.1]:4242")
    cpu = pytest.raises(RuntimeError, match="can't allocate memory")
    with cpu as info, _collective("all_gather_object"):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:121] DefaultCPUAllocator: can't allocate memory")
    assert not isinstance(info.value, PeerLost)
    with pytest.raises(torch.OutOfMemoryError), _collective("all_gather_object"):
        raise torch.OutOfMemoryError("CUDA out of memory")


def test_a_rollout_does_not_depend_on_the_batch_it_was_drawn_in(tiny_model_dir: Path) -> None:
    """The merged engine draws row r of a step from the stream of (seed, r): one rank sampling prompts 2-3 with
    first_row = 2·G gets what one process sampling prompts 0-3 got for them."""
    from grpo_core.policy import load_policy
    from grpo_core.rollout.engines.merged import MergedEngine

    model, tok = load_policy(tiny_model_dir, GRPOConfig(precision="fp32", device="cpu"), seed=0)
    engine = MergedEngine(model, tok, torch.float32)
    prompts = ["1+2=", "13+4=", "2*3=", "7+8+9="]
    g = 3
    whole = engine.generate(prompts, Sampling(g, 8, 1.0, 1.0, seed=9))
    share = engine.generate(prompts[2:], Sampling(g, 8, 1.0, 1.0, seed=9, first_row=2 * g))
    assert whole.texts[2 * g :] == share.texts
    width = share.completion_ids.shape[1]
    assert torch.equal(
        whole.completion_ids[2 * g :, :width] * whole.completion_mask[2 * g :, :width],
        share.completion_ids * share.completion_mask,
    )
    assert len(set(whole.texts)) > 1  # it did sample


def test_a_share_sampled_in_the_steps_shapes_has_the_steps_log_probs_to_the_bit(tiny_model_dir: Path) -> None:
    """Prompts of different lengths: a share told the step's prompts (``Sampling.step_prompts``) is left-padded to
    the step's widest prompt and masked as the step is, so its sampling log-probs are the whole batch's rows
    bit for bit (at its own width they differed by 4.8e-7 on an AVX2 CPU, which the importance correction
    carries into the update). One thread, as in the exactness test: with two, how a kernel splits rows over
    threads depends on the batch, and so do the last bits."""
    from grpo_core.policy import load_policy
    from grpo_core.rollout.engines.merged import MergedEngine

    model, tok = load_policy(tiny_model_dir, GRPOConfig(precision="fp32", device="cpu"), seed=0)
    engine = MergedEngine(model, tok, torch.float32)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _sample_whole_and_shares(engine)
    finally:
        torch.set_num_threads(threads)


def _sample_whole_and_shares(engine: Any) -> None:
    from dataclasses import replace

    prompts = ["1 2 3", "4 5 6 7 8 9 1 2 3 4 5", "7 8", "9 9 9 9 9 9"]
    g = 4
    sampling = Sampling(g, 12, 1.0, 1.0, seed=5)
    whole = engine.generate(prompts, sampling)
    for lo in (0, 2):
        share = engine.generate(prompts[lo : lo + 2], replace(sampling, first_row=lo * g, step_prompts=tuple(prompts)))
        rows = slice(lo * g, (lo + 2) * g)
        width = share.completion_ids.shape[1]
        assert torch.equal(whole.completion_ids[rows, :width], share.completion_ids)
        assert whole.sampling_logp is not None and share.sampling_logp is not None
        assert torch.equal(whole.sampling_logp[rows, :width], share.sampling_logp)
        assert share.prompt_ids.shape[1] == whole.prompt_ids.shape[1]


def test_a_ranks_vllm_engine_is_spawned_on_its_gpu_in_a_world_of_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM puts its engine on the first visible GPU and would read torchrun's variables as its own world: while a
    rank starts its engine only the rank's GPU is visible and the launcher's variables are gone (then restored)."""
    import os

    from grpo_core.rollout.engines.vllm_engine import _engine_env

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    for k, v in {"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "2", "MASTER_ADDR": "10.0.0.1"}.items():
        monkeypatch.setenv(k, v)
    with _engine_env("cuda:2"):
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "6"
        assert not {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR"} & set(os.environ)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "4,5,6,7" and os.environ["RANK"] == "2"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with _engine_env("cuda:1"):
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    with _engine_env("cpu"):
        assert "CUDA_VISIBLE_DEVICES" not in os.environ
    assert "CUDA_VISIBLE_DEVICES" not in os.environ


def test_micro_batches_are_dealt_in_a_snake_order() -> None:
    """Sorted by length, micro-batch k is longer than k−1: a plain round-robin would give the last rank the longest
    of every round."""
    owners = [[r for r in range(3) if World(rank=r, size=3).owns(k)] for k in range(9)]
    assert owners == [[0], [1], [2], [2], [1], [0], [0], [1], [2]]
