import math

import pytest
import torch

from grpo_core.update.loss import LossInputs, StepSize, kl_estimate, policy_loss


def test_k3_by_hand() -> None:
    # ref = log .5, logp = 0: d = -ln2; e^d - d - 1 = .5 + ln2 - 1
    val = kl_estimate(torch.tensor([0.0]), torch.tensor([math.log(0.5)]), "k3")
    assert val.item() == pytest.approx(0.5 + math.log(2) - 1, rel=1e-6)
    assert kl_estimate(torch.tensor([-1.3]), torch.tensor([-1.3]), "k3").item() == 0.0


def test_clipped_surrogate_by_hand() -> None:
    # seq 0: A=+1, ratios e^.5 (clipped at 1.2) and 1 -> tokens -1.2, -1 -> mean -1.1
    # seq 1: A=-1, ratio e^-.5 =.6065 (< .8 -> clip to .8, min(-.6065, -.8) = -.8 -> loss .8); 2nd token masked
    old = torch.zeros(2, 2)
    logp = torch.tensor([[0.5, 0.0], [-0.5, 3.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    out = policy_loss(
        LossInputs(logp=logp, old_logp=old, advantages=torch.tensor([1.0, -1.0]), mask=mask),
        epsilon=0.2,
        epsilon_high=0.2,
        beta=0.0,
        n_sequences=2,
    )
    assert out.loss.item() == pytest.approx((-1.1 + 0.8) / 2, rel=1e-6)
    assert out.metrics["tokens"] == 3.0
    assert out.metrics["clipped_tokens"] == 2.0


def test_asymmetric_clip_high() -> None:
    logp = torch.tensor([[0.22]])  # ratio 1.246: inside 1+0.28, outside 1+0.2
    out = policy_loss(
        LossInputs(logp=logp, old_logp=torch.zeros(1, 1), advantages=torch.tensor([1.0]), mask=torch.ones(1, 1)),
        epsilon=0.2,
        epsilon_high=0.28,
        beta=0.0,
        n_sequences=1,
    )
    assert out.loss.item() == pytest.approx(-math.exp(0.22), rel=1e-6)


def test_on_policy_gradient_is_advantage_weighted_logprob_gradient() -> None:
    logp = torch.tensor([[-1.0, -2.0], [-0.5, -0.1]], requires_grad=True)
    adv = torch.tensor([2.0, -1.0])
    mask = torch.ones(2, 2)
    out = policy_loss(
        LossInputs(logp=logp, old_logp=logp.detach(), advantages=adv, mask=mask),
        epsilon=0.2,
        epsilon_high=0.2,
        beta=0.0,
        n_sequences=2,
    )
    out.loss.backward()
    # d/dlogp of -(1/2) Σ_i (1/2) Σ_t A_i ρ_it  at ρ=1  =  -A_i / 4
    assert logp.grad.tolist() == [[-0.5, -0.5], [0.25, 0.25]]


def test_kl_term_added_per_token() -> None:
    ref = torch.tensor([[math.log(0.5)]])
    out = policy_loss(
        LossInputs(
            logp=torch.zeros(1, 1),
            old_logp=torch.zeros(1, 1),
            advantages=torch.zeros(1),
            mask=torch.ones(1, 1),
            ref_logp=ref,
        ),
        epsilon=0.2,
        epsilon_high=0.2,
        beta=0.1,
        n_sequences=1,
    )
    assert out.loss.item() == pytest.approx(0.1 * (0.5 + math.log(2) - 1), rel=1e-6)


def test_beta_needs_reference() -> None:
    with pytest.raises(ValueError, match="ref_logp"):
        policy_loss(
            LossInputs(
                logp=torch.zeros(1, 1), old_logp=torch.zeros(1, 1), advantages=torch.zeros(1), mask=torch.ones(1, 1)
            ),
            epsilon=0.2,
            epsilon_high=0.2,
            beta=0.1,
            n_sequences=1,
        )


def test_micro_batches_sum_to_full_batch_gradient() -> None:
    torch.manual_seed(0)
    base = torch.randn(4, 5)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0], [1, 1, 0, 0, 0]], dtype=torch.float32)
    adv, old, ref = torch.randn(4), base - 0.1 * torch.randn(4, 5), base + 0.2 * torch.randn(4, 5)

    def grad(chunks: list[slice]) -> torch.Tensor:
        logp = base.clone().requires_grad_(True)
        for sl in chunks:
            policy_loss(
                LossInputs(logp=logp[sl], old_logp=old[sl], advantages=adv[sl], mask=mask[sl], ref_logp=ref[sl]),
                epsilon=0.2,
                epsilon_high=0.28,
                beta=0.04,
                n_sequences=4,
            ).loss.backward()
        return logp.grad

    full = grad([slice(0, 4)])
    assert torch.allclose(full, grad([slice(0, 2), slice(2, 4)]), atol=1e-7)
    assert torch.allclose(full, grad([slice(i, i + 1) for i in range(4)]), atol=1e-7)


# ---- aggregation modes, sequence-level ratios, two-sided clip, KL estimators --------------------------------

LOGP = torch.tensor([[0.5, 0.0, 0.1], [-0.5, 3.0, 0.0]])
MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
ADV = torch.tensor([1.0, -1.0])
# per-token surrogate at old_logp = 0, eps 0.2: seq 0 -> [-1.2, -1.0, (masked)], seq 1 -> [0.8, (masked)]


def _loss(aggregation: str, **kw: object) -> float:
    step = StepSize(n_sequences=2, n_tokens=3.0, max_completion_tokens=4, n_micro_batches=kw.pop("n_micro", 1))
    out = policy_loss(
        LossInputs(logp=LOGP, old_logp=torch.zeros(2, 3), advantages=ADV, mask=MASK),
        epsilon=0.2,
        epsilon_high=0.2,
        beta=0.0,
        step=step,
        aggregation=aggregation,
        **kw,  # type: ignore[arg-type]
    )
    return out.loss.item()


def test_aggregations_by_hand() -> None:
    assert _loss("seq_mean_token_mean") == pytest.approx((-1.1 + 0.8) / 2, rel=1e-6)
    assert _loss("token_mean") == pytest.approx((-2.2 + 0.8) / 3, rel=1e-6)
    assert _loss("seq_mean_token_sum_norm") == pytest.approx((-2.2 + 0.8) / (2 * 4), rel=1e-6)
    assert _loss("bnpo", n_micro=2) == pytest.approx((-2.2 + 0.8) / 3 / 2, rel=1e-6)


def test_sequence_level_ratio_is_the_length_normalised_geometric_mean() -> None:
    # seq 0: log w = (0.5 + 0) / 2 = 0.25 -> ρ = 1.284 > 1.2, A > 0 -> clipped: -1.2 per token
    # seq 1: log w = -0.5 -> ρ = 0.607 < 0.8, A < 0 -> -min(-0.607, -0.8) = 0.8
    assert _loss("seq_mean_token_mean", level="sequence") == pytest.approx((-1.2 + 0.8) / 2, rel=1e-6)


def test_two_sided_clip_caps_the_ratio_for_negative_advantages() -> None:
    logp = torch.tensor([[2.0]])  # ρ = e² = 7.39, A < 0: unclipped term -7.39 dominates -> capped at delta 3
    out = policy_loss(
        LossInputs(logp=logp, old_logp=torch.zeros(1, 1), advantages=torch.tensor([-1.0]), mask=torch.ones(1, 1)),
        epsilon=0.2,
        epsilon_high=0.2,
        beta=0.0,
        n_sequences=1,
        delta=3.0,
    )
    assert out.loss.item() == pytest.approx(3.0, rel=1e-6)


def test_kl_estimators_by_hand() -> None:
    logp, ref = torch.tensor([0.0]), torch.tensor([math.log(0.5)])
    assert kl_estimate(logp, ref, "k1").item() == pytest.approx(math.log(2), rel=1e-6)
    assert kl_estimate(logp, ref, "k2").item() == pytest.approx(0.5 * math.log(2) ** 2, rel=1e-6)
    assert kl_estimate(logp, ref, "k3").item() == pytest.approx(0.5 + math.log(2) - 1, rel=1e-6)


def test_importance_weighted_kl_by_hand() -> None:
    # A = 0, so only β·KL is left (β = 1). Token 1: ρ = e^{0 − (−ln2)} = 2, k3 = e^{−ln2} + ln2 − 1 = ln2 − ½;
    # token 2: ρ = ½, k3 = e^{ln2} − ln2 − 1 = 1 − ln2.  Weighted: (2(ln2 − ½) + ½(1 − ln2)) / 2 = ¾ln2 − ¼;
    # unweighted: ((ln2 − ½) + (1 − ln2)) / 2 = ¼.  d(ρ·k3)/dlogp = ρ·k3 + ρ(1 − e^{ref−logp}): 2ln2 and −½ln2,
    # each halved by the token mean.  The δ cap (1.5) and the TIS weight (0.1) touch the policy term only.
    ln2 = math.log(2)
    old = torch.tensor([[-ln2, ln2]], dtype=torch.float64)
    ref = torch.tensor([[-ln2, ln2]], dtype=torch.float64)
    common = {"epsilon": 0.2, "epsilon_high": 0.2, "beta": 1.0, "n_sequences": 1}

    def run(weighted: bool, level: str) -> tuple[float, list[float], float]:
        logp = torch.zeros(1, 2, dtype=torch.float64, requires_grad=True)
        out = policy_loss(
            LossInputs(
                logp=logp,
                old_logp=old,
                advantages=torch.zeros(1, dtype=torch.float64),
                mask=torch.ones(1, 2, dtype=torch.float64),
                ref_logp=ref,
                is_weight=torch.full((1, 2), 0.1, dtype=torch.float64),
            ),
            delta=1.5,
            level=level,  # type: ignore[arg-type]
            kl_importance_weighted=weighted,
            **common,  # type: ignore[arg-type]
        )
        out.loss.backward()
        assert logp.grad is not None
        return out.loss.item(), logp.grad[0].tolist(), out.metrics["kl_sum"]

    loss, grad, kl_sum = run(True, "token")
    assert loss == pytest.approx(0.75 * ln2 - 0.25, abs=1e-12)
    assert grad == pytest.approx([ln2, -0.25 * ln2], abs=1e-12)
    assert kl_sum == pytest.approx(1.5 * ln2 - 0.5, abs=1e-12)  # the metric is the KL term of the loss, as TRL
    assert run(False, "token")[0] == pytest.approx(0.25, abs=1e-12)
    # GSPO: one ratio per sequence, exp(mean log ρ) = exp((ln2 − ln2) / 2) = 1, so the value is unweighted, but
    # ∂ρ/∂logp_t = ρ/2 adds ½·Σk3 = ¼ to each token: ½(¼ + 1 − ½) = ⅜ and ½(¼ + 1 − 2) = −⅜.
    loss, grad, _ = run(True, "sequence")
    assert loss == pytest.approx(0.25, abs=1e-12)
    assert grad == pytest.approx([0.375, -0.375], abs=1e-12)


@pytest.mark.parametrize("aggregation", ["seq_mean_token_mean", "token_mean", "seq_mean_token_sum_norm"])
@pytest.mark.parametrize("level", ["token", "sequence"])
def test_every_invariant_aggregation_accumulates_exactly(aggregation: str, level: str) -> None:
    torch.manual_seed(1)
    base = torch.randn(4, 5, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0], [1, 1, 0, 0, 0]], dtype=torch.float64)
    adv = torch.randn(4, dtype=torch.float64)
    old = base - 0.3 * torch.randn(4, 5, dtype=torch.float64)
    ref = base + 0.2 * torch.randn(4, 5, dtype=torch.float64)
    step = StepSize(n_sequences=4, n_tokens=float(mask.sum()), max_completion_tokens=5)

    def grad(chunks: list[slice]) -> torch.Tensor:
        logp = base.clone().requires_grad_(True)
        for sl in chunks:
            policy_loss(
                LossInputs(logp=logp[sl], old_logp=old[sl], advantages=adv[sl], mask=mask[sl], ref_logp=ref[sl]),
                epsilon=0.2,
                epsilon_high=0.28,
                beta=0.04,
                step=step,
                aggregation=aggregation,  # type: ignore[arg-type]
                level=level,
                delta=2.0,  # type: ignore[arg-type]
            ).loss.backward()
        return logp.grad

    full = grad([slice(0, 4)])
    assert full.abs().sum() > 0
    assert torch.allclose(full, grad([slice(0, 1), slice(1, 4)]), atol=1e-12)
    assert torch.allclose(full, grad([slice(i, i + 1) for i in range(4)]), atol=1e-12)


def test_entropy_matches_the_definition() -> None:
    from grpo_core.update.token_logprob import logprobs_and_entropy

    torch.manual_seed(0)
    logits = torch.randn(2, 3, 11, dtype=torch.float64)
    idx = torch.randint(0, 11, (2, 3))
    lp, ent = logprobs_and_entropy(logits, idx, entropy_grad=False)
    logp_all = torch.log_softmax(logits, -1)
    assert torch.allclose(ent.double(), -(logp_all.exp() * logp_all).sum(-1), atol=1e-6)
    assert torch.allclose(lp.double(), logp_all.gather(-1, idx.unsqueeze(-1)).squeeze(-1), atol=1e-6)


def test_high_entropy_mask_keeps_the_top_share_of_real_tokens() -> None:
    from grpo_core.update.loss import high_entropy_mask

    ent = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])  # the 9.0 is padding and must not count
    # median of [1, 2, 3, 4, 5] is 3: keep >= 3
    assert high_entropy_mask(ent, mask, 0.5).tolist() == [[0.0, 0.0, 1.0], [1.0, 1.0, 0.0]]
    assert high_entropy_mask(ent, torch.zeros_like(mask), 0.5).sum() == 0


def test_entropy_bonus_is_subtracted_per_token_and_has_a_gradient() -> None:
    ent = torch.tensor([[0.5, 1.5, 9.0], [2.0, 9.0, 9.0]], requires_grad=True)
    common = {"epsilon": 0.2, "epsilon_high": 0.2, "beta": 0.0, "n_sequences": 2}
    inputs = LossInputs(logp=LOGP, old_logp=torch.zeros(2, 3), advantages=ADV, mask=MASK, entropy=ent)
    with_bonus = policy_loss(inputs, entropy_coef=0.1, **common).loss  # type: ignore[arg-type]
    without = policy_loss(inputs, **common).loss  # type: ignore[arg-type]
    # seq-mean-token-mean of the entropy: ((0.5 + 1.5) / 2 + 2.0) / 2 = 1.5
    assert (with_bonus - without).item() == pytest.approx(-0.1 * 1.5, rel=1e-6)
    with_bonus.backward()
    assert torch.allclose(ent.grad, torch.tensor([[-0.025, -0.025, 0.0], [-0.05, 0.0, 0.0]]))
