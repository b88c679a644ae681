"""Our loss against TRL's own GRPOTrainer._compute_loss (trl is a dev-only dependency), in float64.

TRL's method is called unbound on a stand-in ``self`` that holds only the attributes it reads, and a log-prob
function that returns our tensor, so both sides see the same inputs: ragged masks (one row empty), ratios far
outside the clip range, both advantage signs, ε_high ≠ ε_low and β > 0, with TRL's ``use_bias_correction_kl``
off and on (its default in 1.16; ours is ``kl_importance_weighted``). Loss and gradient w.r.t. the log-probs must
agree to 1e-9.
"""

from __future__ import annotations

import collections
import types

import pytest
import torch

from grpo_core.update.loss import LossInputs, StepSize, policy_loss

trl_grpo = pytest.importorskip("trl.trainer.grpo_trainer")

OURS = {
    "grpo": "seq_mean_token_mean",
    "bnpo": "bnpo",
    "dr_grpo": "seq_mean_token_sum_norm",
    "dapo": "token_mean",
}


def trl_loss(
    logp, old, ref, adv, mask, *, loss_type, level, eps_lo, eps_hi, beta, delta, max_len, is_w=None, kl_w=False
):  # type: ignore[no-untyped-def]
    args = types.SimpleNamespace(delta=delta, use_bias_correction_kl=kl_w, steps_per_generation=1)
    fake = types.SimpleNamespace(
        args=args,
        loss_type=loss_type,
        importance_sampling_level=level,
        epsilon_low=eps_lo,
        epsilon_high=eps_hi,
        beta=beta,
        max_completion_length=max_len,
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        use_vllm=is_w is not None,
        vllm_importance_sampling_correction=is_w is not None,
        aux_loss_enabled=False,
        current_gradient_accumulation_steps=1,
        entropy_coef=0.0,
        use_adaptive_entropy=False,
        _entropy_bonus_enabled=False,
        accelerator=types.SimpleNamespace(num_processes=1, gather=lambda x: x, reduce=lambda x, reduction="sum": x),
        _metrics={"train": collections.defaultdict(list), "eval": collections.defaultdict(list)},
        model=types.SimpleNamespace(training=True),
        _get_per_token_logps_and_entropies=lambda *a, **k: (logp, torch.zeros_like(logp), None),
    )
    b, t = logp.shape
    inputs = {
        "prompt_ids": torch.zeros(b, 1, dtype=torch.long),
        "prompt_mask": torch.ones(b, 1, dtype=torch.long),
        "completion_ids": torch.zeros(b, t, dtype=torch.long),
        "completion_mask": mask,
        "advantages": adv,
        "ref_per_token_logps": ref,
        "num_items_in_batch": mask.sum(),
    }
    if old is not None:  # absent: TRL's on-policy path, old = logp.detach()
        inputs["old_per_token_logps"] = old
    if is_w is not None:
        inputs["importance_sampling_ratio"] = is_w
    return trl_grpo.GRPOTrainer._compute_loss(fake, None, inputs)


# TRL pairs sequence-level ratios (GSPO) with the grpo aggregation; it warns on the token-summing ones.
@pytest.mark.parametrize(("loss_type", "level"), [*((k, "token") for k in sorted(OURS)), ("grpo", "sequence")])
@pytest.mark.parametrize("delta", [None, 1.5])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("tis", [False, True])
@pytest.mark.parametrize("kl_w", [False, True])
def test_loss_and_gradient_match_trl(
    loss_type: str, level: str, delta: float | None, seed: int, tis: bool, kl_w: bool
) -> None:
    g = torch.Generator().manual_seed(seed)
    b, t = 6, 7
    base = torch.randn(b, t, generator=g, dtype=torch.float64) - 2.0
    old = base + 0.6 * torch.randn(b, t, generator=g, dtype=torch.float64)  # ratios well outside 1 ± ε
    ref = base + 0.3 * torch.randn(b, t, generator=g, dtype=torch.float64)
    adv = torch.randn(b, generator=g, dtype=torch.float64)
    lengths = torch.tensor([7, 3, 0, 5, 1, 6])
    mask = (torch.arange(t) < lengths.unsqueeze(1)).to(torch.float64)
    kw = {"eps_lo": 0.2, "eps_hi": 0.28, "beta": 0.04, "delta": delta, "kl_w": kl_w}
    # vLLM's truncated importance weights (token_truncate at 2): both sides get the same (B, T) tensor
    is_w = torch.exp(0.5 * torch.randn(b, t, generator=g, dtype=torch.float64)).clamp(max=2.0) if tis else None

    theirs_lp = base.clone().requires_grad_(True)
    theirs = trl_loss(theirs_lp, old, ref, adv, mask, loss_type=loss_type, level=level, max_len=t, is_w=is_w, **kw)
    theirs.backward()

    ours_lp = base.clone().requires_grad_(True)
    ours = policy_loss(
        LossInputs(logp=ours_lp, old_logp=old, advantages=adv, mask=mask, ref_logp=ref, is_weight=is_w),
        epsilon=0.2,
        epsilon_high=0.28,
        beta=0.04,
        delta=delta,
        level=level,  # type: ignore[arg-type]
        aggregation=OURS[loss_type],  # type: ignore[arg-type]
        kl_importance_weighted=kl_w,
        step=StepSize(n_sequences=b, n_tokens=float(mask.sum()), max_completion_tokens=t),
    ).loss
    ours.backward()

    assert abs(ours.item() - theirs.item()) < 1e-9
    assert torch.allclose(ours_lp.grad, theirs_lp.grad, atol=1e-9, rtol=0)
    assert ours_lp.grad.abs().sum() > 0


# On-policy (μ = 1, no vLLM) TRL takes old = logp.detach(): the weighted KL's ratio is 1 in value but adds
# β·KL·∇logp to the gradient, which a user moving from TRL with β > 0 gets by default.
@pytest.mark.parametrize(("loss_type", "level"), [*((k, "token") for k in sorted(OURS)), ("grpo", "sequence")])
@pytest.mark.parametrize("kl_w", [False, True])
def test_on_policy_loss_and_gradient_match_trl(loss_type: str, level: str, kl_w: bool) -> None:
    g = torch.Generator().manual_seed(2)
    b, t = 6, 7
    base = torch.randn(b, t, generator=g, dtype=torch.float64) - 2.0
    ref = base + 0.5 * torch.randn(b, t, generator=g, dtype=torch.float64)
    adv = torch.randn(b, generator=g, dtype=torch.float64)
    mask = (torch.arange(t) < torch.tensor([7, 3, 0, 5, 1, 6]).unsqueeze(1)).to(torch.float64)
    kw = {"eps_lo": 0.2, "eps_hi": 0.28, "beta": 0.3, "delta": None, "kl_w": kl_w}

    theirs_lp = base.clone().requires_grad_(True)
    theirs = trl_loss(theirs_lp, None, ref, adv, mask, loss_type=loss_type, level=level, max_len=t, **kw)
    theirs.backward()

    ours_lp = base.clone().requires_grad_(True)
    ours = policy_loss(
        LossInputs(logp=ours_lp, old_logp=ours_lp.detach(), advantages=adv, mask=mask, ref_logp=ref),
        epsilon=0.2,
        epsilon_high=0.28,
        beta=0.3,
        level=level,  # type: ignore[arg-type]
        aggregation=OURS[loss_type],  # type: ignore[arg-type]
        kl_importance_weighted=kl_w,
        step=StepSize(n_sequences=b, n_tokens=float(mask.sum()), max_completion_tokens=t),
    ).loss
    ours.backward()

    assert abs(ours.item() - theirs.item()) < 1e-9
    assert torch.allclose(ours_lp.grad, theirs_lp.grad, atol=1e-9, rtol=0)
