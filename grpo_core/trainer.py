"""The GRPO loop: one visible ``for`` over optimizer steps.

Each step: take ``batch_size`` prompts -> sample G completions each (one batched generate) -> score them with the
graders (sum of grader scores; None if any grader could not score) -> group-relative advantages -> per-token
log-probs of the completions under the policy (and, when β > 0, under the base model: the same weights with the
LoRA adapter disabled, so no second copy of the model) -> clipped surrogate + β·k3 -> AdamW on the LoRA weights.

This is the on-policy case μ = 1: the rollout is used for exactly one optimizer step, so π_old = π_θ at update
time and no extra forward pass is spent on old log-probs (ratio = exp(logp − logp.detach())).
The model is kept in eval mode throughout (no dropout), so the ratio is exactly 1 in value.

The trainer never knows about HTTP, queues or object stores: progress leaves through ``Callbacks``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import torch

from grpo_core.advantages import compute_advantages
from grpo_core.checkpoint import load_checkpoint, save_checkpoint
from grpo_core.config import GRPOConfig
from grpo_core.data import batches, prompt_text, take
from grpo_core.errors import UserError
from grpo_core.evaluate import mean_reward
from grpo_core.health import HealthMonitor
from grpo_core.logprobs import completion_logprobs
from grpo_core.loss import LossInputs, StepSize, policy_loss
from grpo_core.metrics import step_metrics
from grpo_core.rewards.combine import score_samples
from grpo_core.rewards.graders import Grader
from grpo_core.rollout import Rollout, sample
from grpo_core.schedule import make_scheduler
from grpo_core.shaping import soft_overlong_penalty


class Callbacks(Protocol):
    """How the loop reports; every method is called from the training thread between steps."""

    def on_message(self, message: str, level: str = "info") -> None: ...

    def on_step(self, metrics: dict[str, Any]) -> None: ...

    def on_checkpoint(self, step: int, path: Path, metrics: dict[str, Any], final: bool) -> None: ...

    def should_stop(self) -> bool: ...


@dataclass
class TrainResult:
    steps_done: int
    total_steps: int
    stopped: bool  # should_stop() ended the run early
    final_checkpoint: Path | None
    last_metrics: dict[str, Any] = field(default_factory=dict)


def load_policy(model_dir: Path, cfg: GRPOConfig, seed: int) -> tuple[Any, Any]:
    """Base model in fp32 with a fresh LoRA adapter (initialised from ``seed``) and its tokenizer."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    base.eval()
    torch.manual_seed(seed)
    lora = LoraConfig(
        r=cfg.lora.rank,
        lora_alpha=cfg.lora.alpha,
        lora_dropout=cfg.lora.dropout,
        target_modules=cfg.lora.target_modules,
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(base, lora)
    model.eval()
    return model, tokenizer


def _micro_args(ro: Rollout, idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Rows ``idx`` of the rollout with all-padding columns dropped: (prompt ids, prompt mask, ids, mask)."""
    cmask = ro.completion_mask[idx]
    c_len = max(int(cmask.sum(dim=1).max()), 1)  # drop all-padding tail columns
    pmask = ro.prompt_mask[idx]
    p_start = int((pmask.sum(dim=0) == 0).sum())  # drop all-padding head columns (left padding)
    return ro.prompt_ids[idx, p_start:], pmask[:, p_start:], ro.completion_ids[idx, :c_len], cmask[:, :c_len]


@torch.no_grad()
def _old_logprobs(model: Any, ro: Rollout, cfg: GRPOConfig, autocast: torch.dtype | None) -> torch.Tensor:
    """(B, C) log-probs under the policy that sampled (before any update of this step); 0 past each mask."""
    n, c = ro.completion_ids.shape
    old = torch.zeros(n, c)
    for lo in range(0, n, cfg.micro_batch_size):
        idx = torch.arange(lo, min(lo + cfg.micro_batch_size, n))
        args = _micro_args(ro, idx)
        with torch.autocast("cpu", dtype=autocast, enabled=autocast is not None):
            old[idx, : args[2].shape[1]] = completion_logprobs(model, *args, temperature=cfg.temperature)
    return old


def _update(
    model: Any,
    ro: Rollout,
    adv: torch.Tensor,
    cfg: GRPOConfig,
    autocast: torch.dtype | None,
    old_logp: torch.Tensor | None = None,
) -> dict[str, float]:
    """One optimizer step's gradient, accumulated over micro-batches (seq-mean-token-mean is invariant).

    Two exact savings: with β = 0 a sequence whose advantage is 0 (its group's rewards were all equal, or it was
    unscorable) adds exactly 0 to the loss and its gradient, so its forward/backward is skipped; and sequences
    are grouped into micro-batches by completion length, so little compute goes to padding. The normalisers are
    the whole step's counts, so the gradient is the full-batch one. ``bnpo`` normalises per micro-batch, so
    there neither saving applies and micro-batches keep the sampling order, as in TRL.
    """
    n = ro.completion_ids.shape[0]
    lengths = ro.completion_mask.sum(dim=1)
    if cfg.loss_aggregation == "bnpo" or cfg.top_entropy_quantile < 1.0:
        active = torch.arange(n)  # per-micro-batch normaliser / quantile: composition matters, keep TRL's order
    else:  # rows with no loss tokens (filtered as truncated) contribute exactly 0 as well
        only_pg = cfg.beta == 0 and cfg.entropy_coef == 0
        keep = (lengths > 0) & (adv != 0) if only_pg else (lengths > 0)
        active = torch.nonzero(keep).flatten()
        active = active[torch.argsort(lengths[active], stable=True)]
    step = StepSize(
        n_sequences=n,
        n_tokens=float(lengths.sum()),
        max_completion_tokens=cfg.max_completion_tokens,
        n_micro_batches=max(1, -(-len(active) // cfg.micro_batch_size)),
    )
    sums = {"tokens": float(lengths.sum()), "loss": 0.0, "updated_tokens": 0.0}
    for lo in range(0, len(active), cfg.micro_batch_size):
        idx = active[lo : lo + cfg.micro_batch_size]
        args = _micro_args(ro, idx)
        ref = None
        with torch.autocast("cpu", dtype=autocast, enabled=autocast is not None):
            if cfg.beta > 0:
                with torch.no_grad(), model.disable_adapter():
                    ref = completion_logprobs(model, *args, temperature=cfg.temperature)
            logp, entropy = completion_logprobs(
                model, *args, temperature=cfg.temperature, entropy_grad=cfg.entropy_coef > 0
            )
        out = policy_loss(
            LossInputs(
                logp=logp,
                old_logp=logp.detach() if old_logp is None else old_logp[idx, : logp.shape[1]],
                advantages=adv[idx],
                mask=args[3].float(),
                ref_logp=ref,
                entropy=entropy,
            ),
            epsilon=cfg.epsilon,
            epsilon_high=cfg.clip_high,
            beta=cfg.beta,
            step=step,
            aggregation=cfg.loss_aggregation,
            level=cfg.importance_sampling_level,
            delta=cfg.delta,
            kl_estimator=cfg.kl_estimator,
            entropy_coef=cfg.entropy_coef,
            top_entropy_quantile=cfg.top_entropy_quantile,
        )
        out.loss.backward()
        sums["loss"] += float(out.loss.detach())
        sums["updated_tokens"] += out.metrics["tokens"]
        for k in ("clipped_tokens", "clipped_low_tokens", "clipped_high_tokens", "kl_sum", "entropy_sum"):
            sums[k] = sums.get(k, 0.0) + out.metrics[k]
    for p in model.parameters():  # nothing to learn from this step is a zero gradient, not a skipped step
        if p.requires_grad and p.grad is None:
            p.grad = torch.zeros_like(p)
    return sums


def train(
    cfg: GRPOConfig,
    model_dir: Path,
    rows: list[dict[str, Any]],
    graders: Sequence[Grader],
    *,
    callbacks: Callbacks,
    work_dir: Path,
    seed: int = 0,
    resume_from: Path | None = None,
    valid_rows: list[dict[str, Any]] | None = None,
) -> TrainResult:
    """Run GRPO on ``rows`` and return when done, stopped, or raise (UserError for the user's mistakes)."""
    if not rows:
        raise UserError("the training file has no rows")
    model, tokenizer = load_policy(model_dir, cfg, seed)
    prompts_all = [prompt_text(r, tokenizer) for r in rows]
    for i, p in enumerate(prompts_all):
        n_tok = len(tokenizer(p, add_special_tokens=False)["input_ids"])
        if n_tok > cfg.max_prompt_tokens:
            raise UserError(
                f"training row {i + 1}: prompt is {n_tok} tokens, over max_prompt_tokens={cfg.max_prompt_tokens}"
            )
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    total = cfg.total_steps(len(rows))
    scheduler = make_scheduler(optimizer, cfg, total * cfg.num_iterations)
    start = 0
    if resume_from is not None:
        start = load_checkpoint(model, optimizer, resume_from, scheduler)
        callbacks.on_message(f"Resumed from step {start}")
    autocast = torch.bfloat16 if cfg.precision == "bf16" else None
    G = cfg.group_size
    health = HealthMonitor(cfg.health)
    batch_iter = batches(len(rows), cfg.batch_size, seed, start_step=start)
    last: dict[str, Any] = {}
    final_ckpt: Path | None = None
    step = start
    while step < total:
        if callbacks.should_stop():
            return TrainResult(step, total, True, final_ckpt, last)
        t0 = time.perf_counter()
        idx = next(batch_iter)
        batch_rows = take(rows, idx)
        ro = sample(
            model,
            tokenizer,
            [prompts_all[i] for i in idx],
            group_size=G,
            max_new_tokens=cfg.max_completion_tokens,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            seed=seed * 1_000_003 + step,
            autocast_dtype=autocast,
        )
        t1 = time.perf_counter()
        rows_g = [r for r in batch_rows for _ in range(G)]
        rewards, per_grader, errors = score_samples(graders, ro.texts, rows_g, [i + 1 for i in idx for _ in range(G)])
        if torch.isnan(rewards).all():
            raise UserError(f"every sample of step {step + 1} failed to score; first error: {errors[0]}")
        lengths = ro.completion_mask.sum(dim=1)
        overlong = torch.zeros_like(rewards)
        if cfg.overlong_buffer_fraction:
            buffer = max(1, round(cfg.overlong_buffer_fraction * cfg.max_completion_tokens))
            overlong = cfg.overlong_penalty * soft_overlong_penalty(lengths, cfg.max_completion_tokens, buffer)
            rewards = rewards + overlong
        adv = compute_advantages(rewards, G, estimator=cfg.advantage_estimator, scale=cfg.scale_rewards)
        t2 = time.perf_counter()
        # DAPO's overlong filtering: a truncated completion keeps its place in the group but gets no loss.
        ro_loss = ro
        if cfg.mask_truncated_completions:
            ro_loss = replace(ro, completion_mask=ro.completion_mask * (~ro.truncated).unsqueeze(1))
        # π_old: the sampling policy. With μ = 1 it equals π_θ at update time (logp.detach(), no extra pass).
        old = _old_logprobs(model, ro_loss, cfg, autocast) if cfg.num_iterations > 1 else None
        for _ in range(cfg.num_iterations):
            optimizer.zero_grad(set_to_none=True)
            sums = _update(model, ro_loss, adv, cfg, autocast, old)
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
            if not math.isfinite(grad_norm):
                raise RuntimeError(f"non-finite gradient norm at step {step + 1}; lower learning_rate")
            optimizer.step()
            scheduler.step()
        t3 = time.perf_counter()
        step += 1

        last = step_metrics(
            cfg,
            step=step,
            total=total,
            rewards=rewards,
            per_grader=per_grader,
            adv=adv,
            overlong=overlong,
            ro=ro,
            sums=sums,
            grad_norm=grad_norm,
            lr=scheduler.get_last_lr()[0],
            times=(t0, t1, t2, t3),
            batch_rows=batch_rows,
            errors=errors,
        )
        if valid_rows and (step == total or (cfg.eval_interval and step % cfg.eval_interval == 0)):
            t4 = time.perf_counter()
            last["valid_reward_mean"] = mean_reward(
                model,
                tokenizer,
                valid_rows,
                graders,
                samples_per_prompt=cfg.eval_samples,
                temperature=cfg.eval_temperature,
                max_new_tokens=cfg.max_completion_tokens,
                prompts_per_batch=max(1, cfg.batch_size * cfg.group_size // cfg.eval_samples),
                seed=seed + step,
            )
            last["timing"]["eval"] = round(time.perf_counter() - t4, 3)
        last["warnings"] = health.check(last)
        callbacks.on_step(last)
        for warning in last["warnings"]:
            callbacks.on_message(warning, "warn")
        is_last = step == total
        if is_last or (cfg.checkpoint_interval and step % cfg.checkpoint_interval == 0):
            path = save_checkpoint(model, optimizer, step, work_dir / f"step-{step:06d}", scheduler)
            callbacks.on_checkpoint(step, path, last, is_last)
            final_ckpt = path
    return TrainResult(step, total, False, final_ckpt, last)
