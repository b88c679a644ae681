"""Exact credit assignment in multi-turn episodes: which positions carry loss, and the loss they give."""

from __future__ import annotations

from pathlib import Path

import torch

from grpo_core.policy import load_policy
from grpo_core.rollout.agent.episodes import Episode, pack_episodes
from grpo_core.rollout.batch import Rollout
from grpo_core.schemas.config import GRPOConfig
from grpo_core.update.logprobs import completion_logprobs
from grpo_core.update.loss import LossInputs, StepSize, policy_loss
from grpo_core.update.step import micro_args, policy_update


class _Tok:
    pad_token_id = 0


def _episode(prompt: list[int], turns: list[tuple[str, list[int]]], logp: float = -0.5) -> Episode:
    ep = Episode(row=0, item={}, prompt=prompt, messages=[], tools=None)
    for kind, ids in turns:
        ep.add(ids, kind, [logp] * len(ids) if kind == "model" else None)
    return ep


def test_hand_built_trajectory_masks_exactly_the_model_tokens() -> None:
    # prompt | model turn 1 (ends with EOS 0) | tool result + template | model turn 2 (EOS)
    ep = _episode([1, 5, 6], [("model", [7, 8, 0]), ("tool", [9, 10, 11]), ("model", [12, 0])])
    short = _episode([4], [("model", [3, 0])])
    ro = pack_episodes([ep, short], _Tok(), [0], with_logps=True)
    assert ro.prompt_ids.tolist() == [[1, 5, 6], [0, 0, 4]]
    assert ro.prompt_mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert ro.completion_ids.tolist() == [[7, 8, 0, 9, 10, 11, 12, 0], [3, 0, 0, 0, 0, 0, 0, 0]]
    assert ro.completion_mask.tolist() == [[1, 1, 1, 0, 0, 0, 1, 1], [1, 1, 0, 0, 0, 0, 0, 0]]
    assert ro.sampling_logp is not None
    assert ro.sampling_logp[0].tolist() == [-0.5, -0.5, -0.5, 0.0, 0.0, 0.0, -0.5, -0.5]
    assert ep.spans == [(0, 3, "model"), (3, 6, "tool"), (6, 8, "model")]
    assert ro.episodes == [ep, short]
    # the selection keeps each row's episode with it (GFPO, dynamic sampling)
    assert ro.select(torch.tensor([1, 0])).episodes == [short, ep]


def test_micro_batch_keeps_columns_up_to_the_last_trained_token() -> None:
    # the last columns are a tool result nobody trains on: dropped; the hole before the last model turn is kept
    ids = torch.tensor([[7, 8, 9, 12, 13, 14], [3, 0, 0, 0, 0, 0]])
    mask = torch.tensor([[1, 0, 0, 1, 0, 0], [1, 1, 0, 0, 0, 0]])
    ro = Rollout(
        torch.ones(2, 2, dtype=torch.long),
        torch.ones(2, 2, dtype=torch.long),
        ids,
        mask,
        torch.zeros(2).bool(),
        ["", ""],
    )
    _, _, c_ids, c_mask = micro_args(ro, torch.tensor([0, 1]))
    assert c_ids.tolist() == [[7, 8, 9, 12], [3, 0, 0, 0]]
    assert c_mask.tolist() == [[1, 0, 0, 1], [1, 1, 0, 0]]


def _grads(params: list[torch.Tensor]) -> list[torch.Tensor]:
    out = [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in params]
    for p in params:
        p.grad = None
    return out


def _model(tiny_model_dir: Path) -> tuple[object, list[torch.Tensor]]:
    torch.manual_seed(0)
    model, _ = load_policy(tiny_model_dir, GRPOConfig(), seed=0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.1)
    return model, [p for p in model.parameters() if p.requires_grad]


def test_two_turn_episode_with_an_empty_tool_message_has_the_single_turn_loss(tiny_model_dir: Path) -> None:
    model, params = _model(tiny_model_dir)
    cfg = GRPOConfig.model_validate({"max_completion_tokens": 8, "micro_batch_size": 2})
    prompt, first, second = [5, 6, 7], [8, 9, 0], [10, 11, 0]
    # the single-turn completion is both turns back to back
    single = Rollout(
        torch.tensor([prompt]),
        torch.ones(1, 3, dtype=torch.long),
        torch.tensor([first + second]),
        torch.ones(1, 6, dtype=torch.long),
        torch.zeros(1, dtype=torch.bool),
        [""],
    )
    multi = pack_episodes(
        [_episode(prompt, [("model", first), ("tool", []), ("model", second)])], _Tok(), [0], with_logps=False
    )
    adv = torch.tensor([0.8])
    a = policy_update(model, single, adv, cfg, None)
    ga = _grads(params)
    b = policy_update(model, multi, adv, cfg, None)
    gb = _grads(params)
    assert a.loss == b.loss and a.loss != 0.0
    assert all(torch.equal(x, y) for x, y in zip(ga, gb, strict=True))


def test_tool_tokens_are_context_but_carry_no_loss(tiny_model_dir: Path) -> None:
    """With a tool result between the turns, the update's gradient is the loss over the model's tokens only, their
    log-probs taken with the tool tokens in context (not the single-turn ones)."""
    model, params = _model(tiny_model_dir)
    cfg = GRPOConfig.model_validate({"max_completion_tokens": 9, "micro_batch_size": 2, "beta": 0.0})
    prompt, first, tool, second = [5, 6, 7], [8, 9, 0], [12, 13, 14], [10, 11, 0]
    ro = pack_episodes(
        [_episode(prompt, [("model", first), ("tool", tool), ("model", second)])], _Tok(), [0], with_logps=False
    )
    adv = torch.tensor([-0.6])
    policy_update(model, ro, adv, cfg, None)
    got = _grads(params)

    ids, mask = ro.completion_ids, ro.completion_mask
    assert mask.tolist() == [[1, 1, 1, 0, 0, 0, 1, 1, 1]]
    logp = completion_logprobs(model, ro.prompt_ids, ro.prompt_mask, ids, mask, temperature=cfg.temperature)
    policy_loss(
        LossInputs(logp=logp, old_logp=logp.detach(), advantages=adv, mask=mask.float(), ref_logp=None),
        epsilon=cfg.epsilon,
        epsilon_high=cfg.clip_high,
        beta=0.0,
        aggregation=cfg.loss_aggregation,
        level=cfg.importance_sampling_level,
        step=StepSize(n_sequences=1, n_tokens=float(mask.sum()), max_completion_tokens=9),
    ).loss.backward()
    want = _grads(params)
    assert any(float(w.abs().sum()) > 0 for w in want)
    for g, w in zip(got, want, strict=True):
        assert torch.allclose(g, w, atol=1e-6)
    # the second turn's log-probs depend on the tool tokens before it: they are taken in the episode's context
    without = completion_logprobs(
        model,
        ro.prompt_ids,
        ro.prompt_mask,
        torch.tensor([first + second]),
        torch.ones(1, 6),
        temperature=cfg.temperature,
    )
    assert not torch.allclose(logp[0, 6:], without[0, 3:])
    assert torch.allclose(logp[0, :3], without[0, :3], atol=1e-6)
