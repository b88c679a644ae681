"""Several tenants' updates in shared passes (grpo_core.update.together): each tenant's loss, sums and gradient
equal its update alone (grpo_core.update.step.policy_update) within rounding in fp32, with β > 0, μ = 2, an
entropy bonus, micro-batches split by a token budget and rows of very different lengths; the adapters' values are
not touched; and a pass of four tenants launches fewer kernels than their passes alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from bench.update_counts import CountOps
from grpo_core.hardware.distributed import World
from grpo_core.schemas.config import GRPOConfig
from grpo_core.update.logprobs import packed_token_logprobs
from grpo_core.update.lora_fused import token_adapters
from grpo_core.update.packing import pack, packed_attention
from grpo_core.update.step import UpdatePath, old_logprobs, policy_update
from grpo_core.update.together import Part, concat_packs, policy_updates_together, together_key
from tests.training import nontrivial_policy
from tests.unit.test_packing import _batch, _rollout

ATOL = 1e-5
PATH = UpdatePath(packing=True, fused_head=True)


def _adapters(model: Any, n: int) -> list[list[torch.Tensor]]:
    """``n`` different adapters' values in slot order."""
    slot = [p for p in model.parameters() if p.requires_grad]
    g = torch.Generator().manual_seed(5)
    return [[p.detach() + 0.05 * torch.randn(p.shape, generator=g) for p in slot] for _ in range(n)]


def _alone(model: Any, values: list[torch.Tensor], cfg: GRPOConfig, adv: torch.Tensor) -> tuple[Any, list, Any]:
    slot = [p for p in model.parameters() if p.requires_grad]
    with torch.no_grad():
        for p, v in zip(slot, values, strict=True):
            p.copy_(v)
    ro = _rollout()
    old = old_logprobs(model, ro, adv, cfg, None, World(), PATH) if cfg.num_iterations > 1 else None
    model.zero_grad(set_to_none=True)
    sums = policy_update(model, ro, adv, cfg, None, old, World(), PATH)
    grads = [p.grad.clone() for p in slot]
    model.zero_grad(set_to_none=True)
    return sums, grads, old


@pytest.mark.parametrize("budget", [30, 10_000])
def test_tenants_updated_together_get_what_each_gets_alone(tiny_model_dir: Path, budget: int) -> None:
    model = nontrivial_policy(tiny_model_dir)
    slot = [p for p in model.parameters() if p.requires_grad]
    base = {"beta": 0.04, "num_iterations": 2, "entropy_coef": 0.01, "temperature": 0.7, "micro_batch_size": 7}
    cfgs = [GRPOConfig(**base, max_tokens_per_micro_batch=budget, learning_rate=lr) for lr in (1e-3, 2e-3, 3e-3)]
    advs = [torch.linspace(-1.0, 1.0, 7), torch.linspace(1.0, -0.5, 7), torch.linspace(0.2, 0.9, 7)]
    values = _adapters(model, 3)
    alone = [_alone(model, v, c, a) for v, c, a in zip(values, cfgs, advs, strict=True)]
    keys = {together_key(c, None, PATH, World()) for c in cfgs}
    assert len(keys) == 1 and None not in keys
    with torch.no_grad():  # the slot holds something else: the parts bring their own values
        for p in slot:
            p.zero_()
    parts = [
        Part(_rollout(), a, c, None, old, PATH, v)
        for v, c, a, (_, _, old) in zip(values, cfgs, advs, alone, strict=True)
    ]
    got = policy_updates_together(model, slot, parts, World())
    for (sums, grads), (want, want_grads, _) in zip(got, alone, strict=True):
        assert sums.updated_tokens == want.updated_tokens and sums.clipped_tokens == want.clipped_tokens
        assert sums.loss == pytest.approx(want.loss, abs=ATOL)
        assert sums.kl_sum == pytest.approx(want.kl_sum, abs=ATOL)
        assert sums.entropy_sum == pytest.approx(want.entropy_sum, abs=1e-4)
        for g, w in zip(grads, want_grads, strict=True):
            assert torch.allclose(g, w, rtol=1e-4, atol=ATOL), (g - w).abs().max()
    assert all(torch.equal(p, torch.zeros_like(p)) for p in slot)  # the slot's values were not read or written
    assert all(p.grad is None for p in slot)
    assert any(not torch.equal(a, b) for a, b in zip(got[0][1], got[1][1], strict=True))  # each its own gradient


def test_one_pass_of_four_tenants_launches_fewer_kernels_than_four_passes(tiny_model_dir: Path) -> None:
    """What makes updating together pay on a GPU, where a small update is launch-bound: a pass over four tenants'
    micro-batches launches the base model's kernels once (the adapters add the same two matmuls per layer)."""
    model = nontrivial_policy(tiny_model_dir)
    slot = [p for p in model.parameters() if p.requires_grad]
    host = pack(*_batch(), share_prefix=True)
    counted = []
    for tenants in (1, 4):
        joint = concat_packs([host] * tenants).to(torch.device("cpu"))
        n = joint.input_ids.shape[1] // tenants
        with token_adapters(model, _adapters(model, tenants), slot, [n] * tenants), CountOps() as c:
            logp, _ = packed_token_logprobs(model, joint, temperature=1.0, fused_head=True)
            with packed_attention(model):
                logp.sum().backward()
        counted.append(c.counts.launches)
    assert counted[1] == counted[0]  # four tenants' tokens in one pass: one tenant's launches, not four times them
