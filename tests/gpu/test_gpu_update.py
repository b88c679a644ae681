"""The packed update on CUDA (issue 44): torch's varlen flash attention against the padded kernel, and the whole
update against the CPU's, in the precision a GPU trains in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from grpo_core.update.attention import (
    AttentionRow,
    padded_attention,
    padded_layout,
    varlen_attention,
    varlen_layout,
    varlen_works,
)
from tests.tiny_model import build_tiny_model


def test_varlen_attention_is_the_padded_kernel_on_this_gpu() -> None:
    """Forward and backward of a pack with a shared prompt, its completions and a segment of its own, grouped
    heads: varlen flash (the GPU's kernel for the pack) against the masked SDPA every device runs."""
    assert varlen_works("cuda", torch.bfloat16), "this torch's varlen attention is missing or disagrees"
    device = torch.device("cuda")
    rows = (AttentionRow(0, 40), AttentionRow(40, 24), AttentionRow(64, 33, 40, 24), AttentionRow(97, 7, 40, 24))
    g = torch.Generator(device=device).manual_seed(0)
    q = torch.randn(104, 8, 64, device=device, dtype=torch.bfloat16, generator=g, requires_grad=True)
    k, v = (torch.randn(104, 2, 64, device=device, dtype=torch.bfloat16, generator=g, requires_grad=True) for _ in "kv")
    grads = []
    for attend, layout in ((varlen_attention, varlen_layout), (padded_attention, padded_layout)):
        out = attend(q, k, v, layout(rows, 104, device), None)
        (out.float() * torch.linspace(-1, 1, out.numel(), device=device).view_as(out)).sum().backward()
        grads.append((out.detach().float(), *(t.grad.float().clone() for t in (q, k, v))))
        for t in (q, k, v):
            t.grad = None
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, atol=3e-2, rtol=3e-2)


def _rollout() -> tuple[Any, torch.Tensor]:
    """Two prompts × 4 completions of 4 to 12 tokens, on the host, and their advantages."""
    from grpo_core.rollout.batch import Rollout

    g = torch.Generator().manual_seed(0)
    prompts = torch.randint(3, 60, (2, 6), generator=g).repeat_interleave(4, 0)
    ids = torch.randint(3, 60, (8, 12), generator=g)
    mask = (torch.arange(12)[None, :] < torch.randint(4, 13, (8, 1), generator=g)).long()
    ro = Rollout(prompts, torch.ones_like(prompts), ids, mask, torch.zeros(8, dtype=torch.bool), [""] * 8)
    return ro, torch.randn(8, generator=g)


def test_the_packed_update_on_the_gpu_is_the_cpus(tmp_path: Path) -> None:
    """One policy_update on CUDA in bf16 (varlen attention, pinned copies, no sync until the metrics) against the
    same update on the CPU in fp32: loss and gradients within bf16's reach."""
    from grpo_core.policy import load_policy
    from grpo_core.schemas.config import GRPOConfig
    from grpo_core.update.step import policy_update

    model_dir = build_tiny_model(tmp_path / "tiny")
    cfg = GRPOConfig(
        beta=0.04,
        group_size=4,
        batch_size=2,
        max_completion_tokens=12,
        gradient_checkpointing=False,
        micro_batch_size=8,
    )
    ro, adv = _rollout()
    results = {}
    for device, precision in (("cpu", "fp32"), ("cuda", "bf16")):
        run_cfg = cfg.model_copy(update={"device": device, "precision": precision})
        model, _ = load_policy(model_dir, run_cfg, seed=0)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.copy_(torch.linspace(-0.05, 0.05, p.numel()).view_as(p))
        sums = policy_update(model, ro, adv, run_cfg, torch.bfloat16 if device == "cuda" else None)
        results[device] = (sums.loss, {n: p.grad.float().cpu() for n, p in model.named_parameters() if p.requires_grad})
    assert results["cuda"][0] == pytest.approx(results["cpu"][0], abs=5e-2)
    for name, grad in results["cpu"][1].items():
        other = results["cuda"][1][name]
        assert torch.nn.functional.cosine_similarity(grad.flatten(), other.flatten(), dim=0) > 0.98, name


def test_the_captured_update_replays_what_the_eager_one_computes(tmp_path: Path) -> None:
    """Three updates (β > 0: the reference pass; an AdamW step between them) with the passes replayed as CUDA
    graphs against the same updates eager, on one model: losses and gradients as close as bf16 allows; the first
    update's packs run eagerly, the second's are captured (their bucket came again), the third's only replay;
    none failed."""
    from grpo_core.policy import load_policy
    from grpo_core.schemas.config import GRPOConfig
    from grpo_core.update.captured import update_graphs
    from grpo_core.update.step import policy_update

    model_dir = build_tiny_model(tmp_path / "tiny")
    cfg = GRPOConfig(beta=0.04, group_size=4, batch_size=2, max_completion_tokens=12, gradient_checkpointing=False,
                     micro_batch_size=8, device="cuda", precision="bf16")  # fmt: skip
    ro, adv = _rollout()
    model, _ = load_policy(model_dir, cfg, seed=0)
    params = [p for p in model.parameters() if p.requires_grad]
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.linspace(-0.05, 0.05, p.numel()).view_as(p))
    optimizer = torch.optim.AdamW(params, lr=1e-3)
    captures = []
    for step in range(3):
        results = []
        for capture in (False, True):
            sums = policy_update(model, ro, adv, cfg.model_copy(update={"capture_update": capture}), torch.bfloat16)
            results.append((sums.loss, [p.grad.float().clone() for p in params]))
            if not capture:
                model.zero_grad(set_to_none=True)
        graphs = model._grpo_update_graphs
        assert graphs.failure is None, graphs.failure
        captures.append(graphs.captures)  # per bucket: the reference pass and the policy's (forward and backward)
        assert update_graphs(model) is None
        (loss0, g0), (loss1, g1) = results
        assert loss1 == pytest.approx(loss0, abs=2e-2), step
        for a, b in zip(g0, g1, strict=True):
            assert torch.nn.functional.cosine_similarity(a.flatten(), b.flatten(), dim=0) > 0.99, step
        optimizer.step()
        model.zero_grad(set_to_none=True)
    assert captures[0] == 0 and captures[1] >= 2 and captures[2] == captures[1], captures
