"""Log-probs, reference pass and a few real optimizer steps on the tiny random model."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch

from grpo_core.policy import load_policy
from grpo_core.rollout.batch import completion_mask
from grpo_core.schemas.config import GRPOConfig
from grpo_core.trainer import train
from grpo_core.update.logprobs import completion_logprobs
from tests.training import GRADER, ROWS, DigitShare, Recorder


def test_left_padded_logprobs_equal_unpadded_at_temperature(tiny_model_dir: Path) -> None:
    model, _ = load_policy(tiny_model_dir, GRPOConfig(), seed=0)
    prompt = torch.tensor([[5, 6, 7]])
    comp = torch.tensor([[8, 9, 10, 0]])
    cmask = torch.ones_like(comp)
    ref = completion_logprobs(model, prompt, torch.ones_like(prompt), comp, cmask, temperature=0.7)
    padded = torch.tensor([[0, 0, 5, 6, 7]])
    pmask = torch.tensor([[0, 0, 1, 1, 1]])
    got = completion_logprobs(model, padded, pmask, comp, cmask, temperature=0.7)
    assert torch.allclose(ref, got, atol=1e-5)
    # by hand: full forward, logits / T, log_softmax, gather
    ids = torch.cat([prompt, comp], dim=1)
    logits = model(input_ids=ids).logits[:, 2:-1] / 0.7
    manual = torch.log_softmax(logits, -1).gather(-1, comp.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(ref, manual, atol=1e-5)


def test_logprobs_match_the_sampling_distribution(tiny_model_dir: Path) -> None:
    """The scores generate() sampled from (softmax of logits / T) are the log-probs the loss uses."""
    model, tok = load_policy(tiny_model_dir, GRPOConfig(), seed=0)
    tok.padding_side = "left"
    enc = tok(["1+2=", "13+4="], return_tensors="pt", padding=True, add_special_tokens=False)
    torch.manual_seed(0)
    out = model.generate(
        **enc,
        do_sample=True,
        temperature=0.7,
        top_k=0,
        top_p=1.0,
        max_new_tokens=5,
        output_scores=True,
        return_dict_in_generate=True,
        pad_token_id=0,
    )
    comp = out.sequences[:, enc["input_ids"].shape[1] :]
    want = torch.stack(
        [torch.log_softmax(s, -1).gather(-1, comp[:, i : i + 1]).squeeze(-1) for i, s in enumerate(out.scores)], dim=1
    )
    mask, _ = completion_mask(comp, [0])
    got = completion_logprobs(model, enc["input_ids"], enc["attention_mask"], comp, mask, temperature=0.7)
    assert mask.sum() >= 2
    assert torch.allclose(got[mask.bool()], want[mask.bool()], atol=1e-5)


def test_disabled_adapter_is_the_base_model(tiny_model_dir: Path) -> None:
    from transformers import AutoModelForCausalLM

    model, _ = load_policy(tiny_model_dir, GRPOConfig(), seed=0)
    with torch.no_grad():  # make the adapter non-trivial
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_()
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    ids = torch.tensor([[3, 4, 5]])
    comp = torch.tensor([[6, 7]])
    ones = torch.ones_like
    with model.disable_adapter():
        off = completion_logprobs(model, ids, ones(ids), comp, ones(comp), temperature=1.0)
    on = completion_logprobs(model, ids, ones(ids), comp, ones(comp), temperature=1.0)
    want = completion_logprobs(base, ids, ones(ids), comp, ones(comp), temperature=1.0)
    assert torch.allclose(off, want, atol=1e-6)
    assert not torch.allclose(on, want, atol=1e-3)


def test_training_changes_only_lora_and_saves_loadable_adapter(tiny_model_dir: Path, tmp_path: Path) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    cfg = GRPOConfig(
        group_size=4,
        batch_size=2,
        max_steps=3,
        max_completion_tokens=6,
        learning_rate=0.01,
        checkpoint_interval=2,
        micro_batch_size=3,
    )
    rec = Recorder()
    result = train(cfg, tiny_model_dir, ROWS, [GRADER, DigitShare()], callbacks=rec, work_dir=tmp_path, seed=3)
    assert result.steps_done == 3 and not result.stopped
    assert [m.step for m in rec.steps] == [1, 2, 3]
    assert [(s, f) for s, _, f in rec.ckpts] == [(2, False), (3, True)]
    m = rec.steps[-1]
    assert m.kl is not None and m.kl >= 0
    assert {g.name for g in m.scores.graders} == {"string_check", "digits"}
    assert 1 <= m.completion_length_mean <= 6
    # the downloaded artefact loads on a fresh base and its LoRA B moved off its zero init
    peft_model = PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(tiny_model_dir), result.final_checkpoint
    )
    lora_b = [p for n, p in peft_model.named_parameters() if "lora_B" in n]
    assert lora_b and any(p.abs().sum() > 0 for p in lora_b)


def test_only_lora_weights_are_trainable(tiny_model_dir: Path) -> None:
    model, _ = load_policy(tiny_model_dir, GRPOConfig(), seed=0)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)


def test_should_stop_ends_between_steps(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = GRPOConfig(group_size=2, batch_size=1, max_steps=5, max_completion_tokens=4, beta=0.0)
    rec = Recorder(stop_after=2)
    result = train(cfg, tiny_model_dir, ROWS, [GRADER], callbacks=rec, work_dir=tmp_path)
    assert result.stopped and result.steps_done == 2
    # the stop checkpoints the finished steps (a paused job resumes from there); nothing else was saved
    assert [(step, final) for step, _, final in rec.ckpts] == [(2, False)] and result.final_checkpoint == rec.ckpts[0][
        1
    ]


def test_prompt_over_limit_is_a_user_error(tiny_model_dir: Path, tmp_path: Path) -> None:
    from grpo_core.errors import UserError

    cfg = GRPOConfig(group_size=2, batch_size=1, max_steps=1, max_prompt_tokens=8)
    with pytest.raises(UserError, match="row 2: prompt is 12 tokens"):
        train(
            cfg,
            tiny_model_dir,
            [{"prompt": "1+1="}, {"prompt": "123456789012"}],
            [GRADER],
            callbacks=Recorder(),
            work_dir=tmp_path,
        )


@pytest.mark.parametrize(
    ("micro_batch_size", "aggregation", "level"),
    [
        (1, "seq_mean_token_mean", "token"),
        (3, "seq_mean_token_mean", "token"),
        (3, "token_mean", "token"),
        (3, "seq_mean_token_sum_norm", "token"),
        (3, "seq_mean_token_mean", "sequence"),
        (4, "bnpo", "token"),
    ],
)
def test_update_gradient_equals_full_batch_loss_gradient(
    tiny_model_dir: Path, micro_batch_size: int, aggregation: str, level: str
) -> None:
    """Skipping zero-advantage rows and length-sorted micro-batches must not change the gradient."""
    from grpo_core.rollout.batch import Rollout
    from grpo_core.update.loss import LossInputs, StepSize, policy_loss
    from grpo_core.update.step import policy_update

    torch.manual_seed(0)
    model, _ = load_policy(tiny_model_dir, GRPOConfig(), seed=0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.1)
    prompt_ids = torch.tensor([[0, 5, 6], [7, 8, 9], [0, 0, 4], [3, 3, 3]])
    prompt_mask = (torch.arange(3) >= torch.tensor([[1], [0], [2], [0]])).long()
    comp = torch.tensor([[5, 6, 0, 0], [7, 7, 7, 7], [9, 0, 0, 0], [4, 5, 6, 0]])
    cmask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 1]])
    ro = Rollout(prompt_ids, prompt_mask, comp, cmask, torch.zeros(4, dtype=torch.bool), [""] * 4)
    adv = torch.tensor([0.7, 0.0, -1.2, 0.0])
    params = [p for p in model.parameters() if p.requires_grad]

    def grads() -> list[torch.Tensor]:
        out = [p.grad.clone() for p in params]
        for p in params:
            p.grad = None
        return out

    for beta in (0.0, 0.04):
        cfg = GRPOConfig.model_validate(
            {
                "beta": beta,
                "micro_batch_size": micro_batch_size,
                "loss_aggregation": aggregation,
                "importance_sampling_level": level,
                "max_completion_tokens": 6,
            }
        )
        policy_update(model, ro, adv, cfg, None)
        got = grads()
        ref_lp = None
        if beta:
            with torch.no_grad(), model.disable_adapter():
                ref_lp = completion_logprobs(model, prompt_ids, prompt_mask, comp, cmask, temperature=1.0)
        logp = completion_logprobs(model, prompt_ids, prompt_mask, comp, cmask, temperature=1.0)
        policy_loss(
            LossInputs(logp=logp, old_logp=logp.detach(), advantages=adv, mask=cmask.float(), ref_logp=ref_lp),
            epsilon=0.2,
            epsilon_high=0.2,
            beta=beta,
            aggregation=cfg.loss_aggregation,
            level=cfg.importance_sampling_level,
            step=StepSize(n_sequences=4, n_tokens=float(cmask.sum()), max_completion_tokens=6),
        ).loss.backward()
        want = grads()
        assert any(float(w.abs().sum()) > 0 for w in want)
        for g, w in zip(got, want, strict=True):
            assert torch.allclose(g, w, atol=1e-6), beta


@pytest.mark.parametrize(
    "variant",
    [
        {"loss_aggregation": "token_mean", "epsilon_high": 0.28, "beta": 0.0},  # DAPO-style
        {"loss_aggregation": "seq_mean_token_sum_norm", "scale_rewards": "none"},  # Dr. GRPO
        {"importance_sampling_level": "sequence", "epsilon": 3e-4, "epsilon_high": 4e-4},  # GSPO
        {"advantage_estimator": "rloo", "scale_rewards": "none", "kl_estimator": "k1"},
        {"advantage_estimator": "reinforce_pp_baseline", "kl_estimator": "k2", "delta": 3.0},
        {"loss_aggregation": "bnpo", "scale_rewards": "batch"},
        {"entropy_coef": 0.01, "top_entropy_quantile": 0.2},  # entropy bonus + 80/20 rule
        {"num_iterations": 3, "lr_scheduler": "cosine", "warmup_ratio": 0.5},
    ],
)
def test_each_variant_trains_two_steps(tiny_model_dir: Path, tmp_path: Path, variant: dict[str, Any]) -> None:
    cfg = GRPOConfig.model_validate(
        {
            "group_size": 4,
            "batch_size": 2,
            "max_steps": 2,
            "max_completion_tokens": 5,
            "learning_rate": 0.01,
            "micro_batch_size": 3,
            **variant,
        }
    )
    rec = Recorder()
    result = train(cfg, tiny_model_dir, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path, seed=1)
    assert result.steps_done == 2 and all(math.isfinite(m.loss) and m.grad_norm > 0 for m in rec.steps)


def test_all_truncated_with_truncation_masking_gives_zero_loss_and_no_update(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DAPO's overlong filtering: with every completion truncated nothing is learned (TRL's test, here exact)."""
    from safetensors.torch import load_file

    cfg = GRPOConfig.model_validate(
        {
            "group_size": 4,
            "batch_size": 2,
            "max_steps": 1,
            "max_completion_tokens": 3,
            "learning_rate": 0.01,
            "mask_truncated_completions": True,
            "beta": 0.04,
        }
    )
    import grpo_core.run as run_mod

    real_load = run_mod.load_policy

    def load_no_eos(model_dir: Path, c: GRPOConfig, seed: int, **kw):  # type: ignore[no-untyped-def]
        model, tok = real_load(model_dir, c, seed, **kw)
        model.generation_config.suppress_tokens = [0]  # EOS can never be sampled: every completion hits the cap
        return model, tok

    monkeypatch.setattr(run_mod, "load_policy", load_no_eos)
    rec = Recorder()
    result = train(cfg, tiny_model_dir, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path, seed=2)
    m = rec.steps[0]
    assert m.truncated_ratio == 1.0 and m.loss == 0.0 and m.grad_norm == 0.0
    weights = load_file(str(result.final_checkpoint / "adapter_model.safetensors"))
    assert all(float(w.abs().sum()) == 0.0 for k, w in weights.items() if "lora_B" in k)


def test_old_logprobs_are_the_sampling_policys(tiny_model_dir: Path) -> None:
    from grpo_core.hardware.distributed import World
    from grpo_core.rollout.batch import Rollout
    from grpo_core.update.step import old_logprobs

    model, _ = load_policy(tiny_model_dir, GRPOConfig(), seed=0)
    prompt_ids = torch.tensor([[0, 5, 6], [7, 8, 9], [0, 0, 4]])
    prompt_mask = (prompt_ids != 0).long()
    comp = torch.tensor([[5, 6, 0, 0], [7, 7, 7, 7], [9, 0, 0, 0]])
    cmask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0]])
    ro = Rollout(prompt_ids, prompt_mask, comp, cmask, torch.zeros(3, dtype=torch.bool), [""] * 3)
    adv = torch.tensor([1.0, -1.0, 0.5])  # every row is in the update, so every row gets its π_old
    old = old_logprobs(model, ro, adv, GRPOConfig(micro_batch_size=2), None, World())
    with torch.no_grad():
        want = completion_logprobs(model, prompt_ids, prompt_mask, comp, cmask, temperature=1.0)
    assert torch.allclose(old[cmask.bool()], want[cmask.bool()], atol=1e-5)


def test_validation_is_scored_every_eval_interval_and_after_the_last_step(tiny_model_dir: Path, tmp_path: Path) -> None:
    cfg = GRPOConfig(
        group_size=2,
        batch_size=2,
        max_steps=3,
        max_completion_tokens=4,
        eval_interval=2,
        eval_samples=2,
        eval_temperature=1.0,
    )
    rec = Recorder()
    train(cfg, tiny_model_dir, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path, valid_rows=ROWS[:3])
    assert [m.scores.valid_reward_mean is not None for m in rec.steps] == [False, True, True]
    valid = [m.scores for m in rec.steps[1:]]
    assert all(0.0 <= (s.valid_reward_mean or -1) <= 1.0 for s in valid)
    assert all(m.timing.step.eval is not None for m in rec.steps[1:])
    assert all((s.valid_pass_at_k or 0) >= (s.valid_reward_mean or 0) for s in valid)  # best of 2 >= the mean
    # the standard error of the validation mean over its 3 prompts (each the mean of its 2 samples): 0 <= se <= 0.5
    assert all(s.valid_reward_stderr is not None and 0.0 <= s.valid_reward_stderr <= 0.5 for s in valid)
