"""grpo_core.training_api.losses by hand, and TrainingModel (grpo_core.training_api.model) on the tiny random model:
log-probs, gradient accumulation, training, exact save/load, the adapter folder, no tensor on an implicit device."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from grpo_core.checkpoint import CheckpointError
from grpo_core.errors import UserError
from grpo_core.policy import load_adapter
from grpo_core.schemas.config import GRPOConfig
from grpo_core.training_api.losses import cispo, cross_entropy, gspo, importance_sampling, loss_of, ppo
from grpo_core.training_api.model import OPTIMIZER_FILE, STATE_FILE, TrainingModel, target_modules
from grpo_core.training_api.spec import BatchError, Datum
from tests.device_guard import ImplicitDeviceGuard

ADAM = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.01, "grad_clip_norm": 1.0}

# --- losses by hand ------------------------------------------------------------------------------------------------
# Three tokens with ratios ρ = (1, 2, 0.5): q = logp − log ρ.
LOGP = [-1.0, -2.0, -0.5]
Q = [-1.0, -2.0 - math.log(2.0), -0.5 + math.log(2.0)]
ADV = [1.0, 1.0, -3.0]


def t(values: list[float], grad: bool = False) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32, device="cpu", requires_grad=grad)


def test_cross_entropy_is_a_weighted_sum() -> None:
    out = cross_entropy(t(LOGP), t([1.0, 0.0, 2.0]))
    assert out.loss.item() == pytest.approx(1.0 + 0.0 + 1.0)
    assert out.metrics == {"loss:sum": pytest.approx(2.0), "tokens:sum": 2.0}


def test_importance_sampling_by_hand() -> None:
    logp = t(LOGP, grad=True)
    out = importance_sampling(logp, t(Q), t(ADV), t([1.0, 1.0, 1.0]))
    assert out.loss.item() == pytest.approx(-(1.0 + 2.0 - 1.5), rel=1e-6)
    assert out.metrics["ratio:mean"] == pytest.approx(3.5 / 3, rel=1e-6)
    out.loss.backward()
    assert logp.grad is not None  # dloss/dlogp_t = −w ρ A
    assert logp.grad.tolist() == pytest.approx([-1.0, -2.0, 1.5], rel=1e-6)
    masked = importance_sampling(t(LOGP), t(Q), t(ADV), t([1.0, 0.0, 1.0]))
    assert masked.loss.item() == pytest.approx(-(1.0 - 1.5), rel=1e-6)
    assert masked.metrics["tokens:sum"] == 2.0


def test_ppo_takes_the_clipped_term_where_it_is_the_smaller() -> None:
    # token 0: ρ 1, A 1 -> 1; token 1: ρ 2 > 1.2, A 1 -> clipped 1.2; token 2: ρ .5 < .8, A −3 -> clipped −2.4
    logp = t(LOGP, grad=True)
    out = ppo(logp, t(Q), t(ADV), t([1.0, 1.0, 1.0]), 0.8, 1.2)
    assert out.loss.item() == pytest.approx(-(1.0 + 1.2 - 2.4), rel=1e-6)
    assert out.metrics["clip_fraction:mean"] == pytest.approx(2 / 3)
    assert list(out.metrics) == ["loss:sum", "tokens:sum", "ratio:mean", "clip_fraction:mean"]
    out.loss.backward()
    assert logp.grad is not None
    assert logp.grad.tolist() == pytest.approx([-1.0, 0.0, 0.0])  # the clipped tokens pass no gradient


def test_ppo_per_token_thresholds_override_the_config() -> None:
    # token 1's high threshold 3: its ratio 2 is inside, the unclipped 2 is taken
    inputs = {"logprobs": t(Q), "advantages": t(ADV), "clip_high_threshold": t([1.2, 3.0, 1.2])}
    out = loss_of("ppo", t(LOGP), inputs, {})
    assert out.loss.item() == pytest.approx(-(1.0 + 2.0 - 2.4), rel=1e-6)
    wide = loss_of("ppo", t(LOGP), {"logprobs": t(Q), "advantages": t(ADV)}, {"clip_low_threshold": 0.1})
    assert wide.loss.item() == pytest.approx(-(1.0 + 1.2 - 1.5), rel=1e-6)


def test_cispo_weighs_the_log_prob_by_the_clipped_ratio() -> None:
    # weights sg(clip(ρ)) = (1, 1.2, 0.8); loss = −Σ c·logp·A = −(1·−1·1 + 1.2·−2·1 + 0.8·−0.5·−3) = 2.2
    logp = t(LOGP, grad=True)
    out = cispo(logp, t(Q), t(ADV), t([1.0, 1.0, 1.0]), 0.8, 1.2)
    assert out.loss.item() == pytest.approx(2.2, rel=1e-6)
    assert out.metrics["clip_fraction:mean"] == pytest.approx(2 / 3)  # ρ = 2 and ρ = 0.5 lie outside
    assert out.metrics["ratio:mean"] == pytest.approx(3.5 / 3, rel=1e-6)
    out.loss.backward()
    assert logp.grad is not None  # dloss/dlogp_t = −c_t A_t: a clipped token keeps its gradient, bounded
    assert logp.grad.tolist() == pytest.approx([-1.0, -1.2, 2.4], rel=1e-6)
    by_name = loss_of("cispo", t(LOGP), {"logprobs": t(Q), "advantages": t(ADV)}, {"clip_high_threshold": 3.0})
    assert by_name.loss.item() == pytest.approx(-(-1.0 - 4.0 + 1.2), rel=1e-6)  # ρ = 2 now inside: weight 2


def test_gspo_gives_each_datum_its_geometric_mean_ratio() -> None:
    # datum A = tokens 0, 1 (log ρ 0 and log 2: s_A = √2); datum B = token 2 (s_B = 0.5)
    wide = {"clip_low": 0.1, "clip_high": 10.0}
    logp = t(LOGP, grad=True)
    out = gspo(logp, t(Q), t(ADV), t([1.0, 1.0, 1.0]), [2, 1], **wide)
    root2 = math.sqrt(2.0)
    assert out.loss.item() == pytest.approx(-(root2 + root2 - 1.5), rel=1e-6)
    assert out.metrics["ratio:mean"] == pytest.approx((2 * root2 + 0.5) / 3, rel=1e-6)
    out.loss.backward()
    assert logp.grad is not None  # value s_d, gradient its own: dloss/dlogp_t = −s_t A_t
    assert logp.grad.tolist() == pytest.approx([-root2, -root2, 1.5], rel=1e-6)
    one = gspo(t(LOGP), t(Q), t(ADV), t([1.0, 1.0, 1.0]), [3], **wide)  # one datum: mean log ρ 0, s = 1
    assert one.loss.item() == pytest.approx(-(1.0 + 1.0 - 3.0), rel=1e-6)


def test_gspo_clips_whole_sequences_at_the_papers_range() -> None:
    # s_A = √2 > 1.0004 with A > 0 and s_B = 0.5 < 0.9997 with A < 0: every token takes its clipped term
    logp = t(LOGP, grad=True)
    out = loss_of("gspo", logp, {"logprobs": t(Q), "advantages": t(ADV)}, {}, [2, 1])
    assert out.loss.item() == pytest.approx(-(1.0004 + 1.0004 - 3 * 0.9997), rel=1e-6)
    assert out.metrics["clip_fraction:mean"] == 1.0
    out.loss.backward()
    assert logp.grad is not None and logp.grad.abs().sum().item() == 0.0


def test_gspo_sequence_mask_and_weights_choose_the_tokens_of_the_ratio() -> None:
    wide = {"clip_low": 0.1, "clip_high": 10.0}
    # the mask marks only token 0 of datum A (log ρ 0: s_A = 1); datum B left it out (NaN): its loss-carrying token
    mask = t([1.0, 0.0, math.nan])
    out = gspo(t(LOGP), t(Q), t(ADV), t([1.0, 1.0, 1.0]), [2, 1], mask, **wide)
    assert out.loss.item() == pytest.approx(-(1.0 + 1.0 - 1.5), rel=1e-6)
    # no mask: token 0 carries no loss (w = 0), so s_A is token 1's ratio, 2
    weighted = gspo(t(LOGP), t(Q), t(ADV), t([0.0, 1.0, 1.0]), [2, 1], **wide)
    assert weighted.loss.item() == pytest.approx(-(2.0 - 1.5), rel=1e-6)
    # a datum with no marked token has s = 1
    none = gspo(t(LOGP), t(Q), t([1.0, 1.0, -3.0]), t([1.0, 1.0, 1.0]), [2, 1], t([0.0, 0.0, 0.0]), **wide)
    assert none.loss.item() == pytest.approx(-(1.0 + 1.0 - 3.0), rel=1e-6)


def test_every_metric_key_has_one_colon_and_the_loss_sum() -> None:
    for name in ("cross_entropy", "importance_sampling", "ppo", "cispo", "gspo"):
        inputs = {"weights": t([1.0, 1.0, 1.0]), "logprobs": t(Q), "advantages": t(ADV)}
        metrics = loss_of(name, t(LOGP), inputs, {}).metrics
        assert "loss:sum" in metrics
        assert all(k.count(":") == 1 for k in metrics), metrics


def test_loss_of_refuses_a_missing_required_input() -> None:
    with pytest.raises(BatchError, match="advantages"):
        loss_of("importance_sampling", t(LOGP), {"logprobs": t(Q)}, {})


# --- the training model --------------------------------------------------------------------------------------------


def sft(tokens: list[int], prompt: int = 2) -> Datum:
    """Next-token cross-entropy on ``tokens`` after its first ``prompt`` positions."""
    n = len(tokens)
    return Datum(tokens[:-1], {"target_tokens": tokens[1:], "weights": [0.0] * (prompt - 1) + [1.0] * (n - prompt)})


DATA = [sft([1, 12, 13, 14, 15, 16, 17]), sft([1, 20, 21, 22]), sft([1, 30, 31, 32, 33, 34, 35, 36, 37, 38])]


def lora_params(m: TrainingModel) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in m.model.named_parameters() if p.requires_grad}


def grads(m: TrainingModel) -> list[torch.Tensor]:
    return [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in m.params]


def step(m: TrainingModel, data: list[Datum] = DATA) -> None:
    m.forward_backward(data, "cross_entropy", {})
    m.optim_step(**ADAM)


def test_target_modules() -> None:
    assert target_modules(True, True) == "all-linear"
    assert target_modules(False, True) == ["q_proj", "k_proj", "v_proj", "o_proj"]
    assert target_modules(True, False) == ["gate_proj", "up_proj", "down_proj"]
    with pytest.raises(ValueError, match="train nothing"):
        target_modules(False, False)


def test_attention_only_adapts_the_attention(tiny_model_dir: Path) -> None:
    m = TrainingModel(tiny_model_dir, rank=2, seed=0, train_mlp=False)
    adapted = {n.split(".")[-4] for n in lora_params(m)}  # ...self_attn.q_proj.lora_A.default.weight
    assert adapted == {"q_proj", "k_proj", "v_proj", "o_proj"}
    assert m.model.peft_config["default"].lora_alpha == 32.0


def test_logprobs_are_the_models_own(tiny_model_dir: Path) -> None:
    m = TrainingModel(tiny_model_dir, rank=4, seed=0)
    step(m)  # B ≠ 0: the adapter takes part
    out = m.forward_backward(DATA, "cross_entropy", {}, backward=False)
    assert all(p.grad is None for p in m.params)  # no graph, no gradient
    with torch.no_grad():
        for datum, got in zip(DATA, out.logprobs, strict=True):
            logits = m.model(input_ids=torch.tensor([datum.tokens], device="cpu")).logits[0]
            want = logits.log_softmax(-1).gather(-1, torch.tensor(datum.inputs["target_tokens"], device="cpu")[:, None])
            assert len(got) == len(datum.tokens)
            torch.testing.assert_close(torch.tensor(got, device="cpu"), want[:, 0], rtol=0, atol=1e-5)
    pairs = [
        (w, lp)
        for d, lps in zip(DATA, out.logprobs, strict=True)
        for w, lp in zip(d.inputs["weights"], lps, strict=True)
    ]
    total = -sum(w * lp for w, lp in pairs)
    assert out.metrics["loss:sum"] == pytest.approx(total, rel=1e-5)
    assert out.metrics["tokens:sum"] == sum(sum(w != 0 for w in d.inputs["weights"]) for d in DATA)


def test_gradients_accumulate_across_calls(tiny_model_dir: Path) -> None:
    """Two calls of one datum each give the gradient of one call of both, micro-batched or not."""
    whole = TrainingModel(tiny_model_dir, rank=4, seed=0)
    whole.forward_backward(DATA[:2], "cross_entropy", {})
    parts = TrainingModel(tiny_model_dir, rank=4, seed=0, micro_batch_tokens=1)
    parts.forward_backward(DATA[:1], "cross_entropy", {})
    parts.forward_backward(DATA[1:2], "cross_entropy", {})
    for a, b in zip(grads(whole), grads(parts), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert any(bool(g.abs().sum() > 0) for g in grads(whole))


def test_packed_datums_compute_the_padded_path(tiny_model_dir: Path) -> None:
    """forward_backward runs the jobs' packed update path (one attention call per layer, the fused head); a model
    that cannot pack runs right-padded micro-batches: the same log-probs and gradient."""
    packed = TrainingModel(tiny_model_dir, rank=4, seed=0)
    padded = TrainingModel(tiny_model_dir, rank=4, seed=0)
    assert packed.packed
    padded.packed = False
    for m in (packed, padded):
        step(m)
    a = packed.forward_backward(DATA, "cross_entropy", {})
    b = padded.forward_backward(DATA, "cross_entropy", {})
    for x, y in zip(a.logprobs, b.logprobs, strict=True):
        assert x == pytest.approx(y, abs=1e-5)
    for ga, gb in zip(grads(packed), grads(padded), strict=True):
        torch.testing.assert_close(ga, gb, rtol=1e-4, atol=1e-6)


def test_micro_batching_and_padding_change_no_logprob(tiny_model_dir: Path) -> None:
    m = TrainingModel(tiny_model_dir, rank=4, seed=0)
    step(m)
    one_pass = m.forward_backward(DATA, "cross_entropy", {}, backward=False).logprobs
    m.micro_batch_tokens = 1  # one datum per pass, no padding
    alone = m.forward_backward(DATA, "cross_entropy", {}, backward=False).logprobs
    for a, b in zip(one_pass, alone, strict=True):
        assert a == pytest.approx(b, abs=1e-5)


def test_rl_losses_run_and_train(tiny_model_dir: Path) -> None:
    m = TrainingModel(tiny_model_dir, rank=4, seed=0)
    first = m.forward_backward(DATA, "cross_entropy", {}, backward=False).logprobs
    rl = [
        Datum(d.tokens, {"target_tokens": d.inputs["target_tokens"], "logprobs": lp, "advantages": [1.0] * len(lp)})
        for d, lp in zip(DATA, first, strict=True)
    ]
    out = m.forward_backward(rl, "ppo", {"clip_high_threshold": 1.3})
    assert out.metrics["ratio:mean"] == pytest.approx(1.0, abs=1e-5)  # on-policy: ρ = 1
    assert out.metrics["clip_fraction:mean"] == 0.0
    assert m.optim_step(**ADAM)["grad_norm:mean"] > 0
    after = m.forward_backward(rl, "importance_sampling", {}, backward=False)
    assert after.metrics["ratio:mean"] > 1.0  # A > 0 everywhere: every sampled token got likelier


@pytest.mark.parametrize("loss_fn", ["gspo", "cispo"])
def test_sequence_losses_split_by_datum_whatever_the_micro_batches(tiny_model_dir: Path, loss_fn: str) -> None:
    """gspo's ratio is per datum: one call of three datums in one pass, the same in one pass per datum, and three
    calls of one datum each add the same gradient (a ratio that leaked across datums would differ)."""
    ref = TrainingModel(tiny_model_dir, rank=4, seed=0)
    step(ref)  # off the sampler's policy: ratios ≠ 1
    sampled = ref.forward_backward(DATA, "cross_entropy", {}, backward=False).logprobs
    rl = [
        Datum(
            d.tokens,
            {
                "target_tokens": d.inputs["target_tokens"],
                "logprobs": [x - 0.1 * k for k, x in enumerate(lp)],
                "advantages": [1.0 - 2 * (i % 2)] * len(lp),
            },
        )
        for i, (d, lp) in enumerate(zip(DATA, sampled, strict=True))
    ]
    config = {"clip_low_threshold": 0.5, "clip_high_threshold": 1.5}
    whole = TrainingModel(tiny_model_dir, rank=4, seed=0)
    step(whole)
    out = whole.forward_backward(rl, loss_fn, config)
    split = TrainingModel(tiny_model_dir, rank=4, seed=0, micro_batch_tokens=1)
    step(split)
    parts = [split.forward_backward([d], loss_fn, config).metrics["loss:sum"] for d in rl]
    assert out.metrics["loss:sum"] == pytest.approx(sum(parts), rel=1e-5)
    for a, b in zip(grads(whole), grads(split), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert any(bool(g.abs().sum() > 0) for g in grads(whole))


def test_cross_entropy_training_lowers_the_loss(tiny_model_dir: Path) -> None:
    m = TrainingModel(tiny_model_dir, rank=8, seed=0)
    datum = [DATA[0]]
    losses = []
    for _ in range(10):
        losses.append(m.forward_backward(datum, "cross_entropy", {}).metrics["loss:sum"])  # before this step
        m.optim_step(**ADAM | {"lr": 3e-3, "weight_decay": 0.0, "grad_clip_norm": 0.0})
    losses.append(m.forward_backward(datum, "cross_entropy", {}, backward=False).metrics["loss:sum"])
    # the tiny model's logits are bounded (an untrained RMSNorm before a small tied head): a steady, modest descent
    assert losses == sorted(losses, reverse=True), losses
    assert losses[-1] < losses[0] - 1.5, losses


def test_optim_step_metrics_clipping_and_version(tiny_model_dir: Path) -> None:
    m = TrainingModel(tiny_model_dir, rank=4, seed=0)
    assert m.version == 0
    m.forward_backward(DATA, "cross_entropy", {})
    before = grads(m)
    norm = math.sqrt(sum(float((g.double() ** 2).sum()) for g in before))
    metrics = m.optim_step(**ADAM | {"grad_clip_norm": 0.0})
    assert metrics == {"grad_norm:mean": pytest.approx(norm, rel=1e-5), "learning_rate:mean": 1e-3}
    assert m.version == 1 and all(p.grad is None for p in m.params)
    assert m.optim_step(**ADAM)["grad_norm:mean"] == 0.0  # no forward_backward: a step on a zero gradient
    assert m.version == 2
    with pytest.raises(BatchError, match=r"adam_params\.beta1"):
        m.optim_step(**ADAM | {"beta1": 1.0})


def test_a_refused_batch_changes_nothing(tiny_model_dir: Path) -> None:
    m = TrainingModel(tiny_model_dir, rank=4, seed=0)
    with pytest.raises(BatchError) as err:
        m.forward_backward(
            [Datum([1, 2], {"target_tokens": [2, m.vocab_size], "weights": [1.0, 1.0]})], "cross_entropy", {}
        )
    assert err.value.param == "data[0].loss_fn_inputs.target_tokens"
    assert all(p.grad is None for p in m.params)


def test_a_call_that_fails_midway_adds_none_of_its_gradient(tiny_model_dir: Path) -> None:
    """Micro-batches are backpropagated one by one: a later one failing (here a non-finite loss; on a GPU an
    out-of-memory) must not leave the earlier ones' gradient behind for the next optim_step or a retry."""
    m = TrainingModel(tiny_model_dir, rank=4, seed=0, micro_batch_tokens=8)
    m.forward_backward(DATA[:1], "cross_entropy", {})
    before = grads(m)
    fine = Datum([1, 12, 13], {"target_tokens": [12, 13, 14], "logprobs": [0.0] * 3, "advantages": [1.0] * 3})
    # ρ = exp(logp − q) ≈ exp(−4.3 + 10) ≈ 300 per token, times A = 3e38: past float32's range
    huge = Datum(
        [1, 20, 21, 22, 23],
        {"target_tokens": [20, 21, 22, 23, 24], "logprobs": [-10.0] * 5, "advantages": [3e38] * 5},
    )
    with pytest.raises(UserError, match="not finite"):
        m.forward_backward([fine, huge], "importance_sampling", {})  # two micro-batches: the short one first
    assert all(torch.equal(a, b) for a, b in zip(grads(m), before, strict=True))


def test_save_state_then_load_state_continues_bit_for_bit(tiny_model_dir: Path, tmp_path: Path) -> None:
    a = TrainingModel(tiny_model_dir, rank=4, seed=0)
    step(a)
    a.save_state(tmp_path / "s1")
    step(a, DATA[1:])
    b = TrainingModel(tiny_model_dir, rank=4, seed=1)  # another init: everything must come from the state
    b.load_state(tmp_path / "s1", optimizer=True)
    assert b.version == 1
    step(b, DATA[1:])
    want, got = lora_params(a), lora_params(b)
    assert want.keys() == got.keys()
    assert all(torch.equal(want[k], got[k]) for k in want)
    assert json.loads((tmp_path / "s1" / STATE_FILE).read_text())["rank"] == 4

    c = TrainingModel(tiny_model_dir, rank=4, seed=0)
    c.load_state(tmp_path / "s1", optimizer=False)
    assert not c.optimizer.state  # a fresh AdamW
    step(c, DATA[1:])
    assert not all(torch.equal(want[k], v) for k, v in lora_params(c).items())  # Adam's first step differs


def test_load_state_refuses_what_does_not_fit(tiny_model_dir: Path, tmp_path: Path) -> None:
    a = TrainingModel(tiny_model_dir, rank=4, seed=0)
    a.save_adapter(tmp_path / "adapter")
    with pytest.raises(CheckpointError, match="no optimizer state"):
        a.load_state(tmp_path / "adapter", optimizer=True)
    a.load_state(tmp_path / "adapter", optimizer=False)  # weights alone load
    other = TrainingModel(tiny_model_dir, rank=2, seed=0)
    with pytest.raises(CheckpointError, match="same rank"):
        other.load_state(tmp_path / "adapter", optimizer=False)
    with pytest.raises(CheckpointError, match=r"adapter_config\.json"):
        other.load_state(tmp_path, optimizer=False)


def test_the_saved_adapter_loads_as_a_peft_adapter(tiny_model_dir: Path, tmp_path: Path) -> None:
    m = TrainingModel(tiny_model_dir, rank=4, seed=0)
    step(m)
    path = m.save_adapter(tmp_path / "adapter")
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {p.name for p in path.iterdir()}
    assert not (path / OPTIMIZER_FILE).exists()
    want = m.forward_backward(DATA, "cross_entropy", {}, backward=False).logprobs
    loaded, _ = load_adapter(tiny_model_dir, path, GRPOConfig.model_validate({"device": "cpu", "precision": "fp32"}))
    with torch.no_grad():
        for datum, lps in zip(DATA, want, strict=True):
            logits = loaded(input_ids=torch.tensor([datum.tokens], device="cpu")).logits[0]
            got = logits.log_softmax(-1).gather(-1, torch.tensor(datum.inputs["target_tokens"], device="cpu")[:, None])
            torch.testing.assert_close(got[:, 0], torch.tensor(lps, device="cpu"), rtol=0, atol=1e-5)


def test_no_tensor_is_created_on_an_implicit_device(tiny_model_dir: Path, tmp_path: Path) -> None:
    m = TrainingModel(tiny_model_dir, rank=4, seed=0)
    rl = [
        Datum(
            d.tokens,
            {
                "target_tokens": d.inputs["target_tokens"],
                "logprobs": [-1.0] * len(d.tokens),
                "advantages": [0.5] * len(d.tokens),
            },
        )
        for d in DATA
    ]
    with ImplicitDeviceGuard() as guard:
        m.forward_backward(DATA, "cross_entropy", {})
        m.forward_backward(rl, "ppo", {})
        m.optim_step(**ADAM)
        m.save_state(tmp_path / "s")
        m.load_state(tmp_path / "s", optimizer=True)
    assert not guard.violations, guard.violations
    m.close()
    m.close()  # once


def test_which_job_adapters_a_training_run_can_have() -> None:
    """run_shape: the (rank, train_mlp, train_attn) of a run with a job's adapter shape, so a pool of jobs asks the
    API for sessions whose runs fit its resident; None where no run has it."""
    from grpo_core.schemas.config import LoraConfig
    from grpo_core.training_api.model import ATTENTION_MODULES, MLP_MODULES, run_shape

    assert run_shape(LoraConfig()) == (16, True, True)  # a job's default: rank 16, α 32, every linear layer
    assert run_shape(LoraConfig(rank=8, target_modules=list(ATTENTION_MODULES))) == (8, False, True)
    assert run_shape(LoraConfig(rank=8, target_modules=list(MLP_MODULES))) == (8, True, False)
    assert run_shape(LoraConfig(alpha=16)) is None  # a run's α is always 32
    assert run_shape(LoraConfig(dropout=0.1)) is None
    assert run_shape(LoraConfig(target_modules=["q_proj", "v_proj"])) is None
