"""grpo_core.policy: a session opens the policy (base model, or a PEFT adapter with its own config) with the job's
engine and frees it on exit, also when the body raised; sample_and_score draws k samples per prompt and scores
each with every grader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from grpo_core.hardware.device import resolve_placement
from grpo_core.policy import load_policy, open_policy
from grpo_core.rewards.base import GraderResult
from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.scored import sample_and_score
from grpo_core.schemas.config import GRPOConfig
from tests.training import DigitShare

CPU = resolve_placement("cpu", "fp32")


class Half:
    """A grader that applies to every other sample only (None elsewhere) and fails on the third."""

    name = "half"

    def score(self, texts: list[str], rows: list[dict[str, Any]], extras: Any = None) -> GraderResult:
        scores: list[float | None] = [1.0 if i % 2 == 0 else None for i in range(len(texts))]
        errors: list[Any] = [ValueError("no") if i == 2 else None for i in range(len(texts))]
        return GraderResult(scores, errors)

    def close(self) -> None:
        pass


def test_a_session_is_closed_and_freed_when_its_body_raises(tiny_model_dir: Path) -> None:
    cfg = GRPOConfig(rollout_engine="merged", max_completion_tokens=4)
    with pytest.raises(RuntimeError, match="boom"), open_policy(cfg, tiny_model_dir, placement=CPU) as session:
        engine = session.engine
        assert session.cfg.rollout_engine == "merged" and session.cfg.device == "cpu" and session.agent is None
        raise RuntimeError("boom")
    assert engine.model is None  # type: ignore[attr-defined]  # the merged engine dropped its sampling copy
    assert not {"model", "engine", "agent", "tokenizer"} & set(vars(session))
    session.close()  # closed once: a second close does nothing


def test_an_adapter_folder_brings_its_own_rank_and_weights(tiny_model_dir: Path, tmp_path: Path) -> None:
    trained, _ = load_policy(tiny_model_dir, GRPOConfig.model_validate({"lora": {"rank": 4, "alpha": 8}}), seed=3)
    with torch.no_grad():
        for name, p in trained.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.1)
    trained.save_pretrained(tmp_path / "adapter", save_embedding_layers=False)
    want = {n: p.detach().clone() for n, p in trained.named_parameters() if "lora_" in n}
    cfg = GRPOConfig(rollout_engine="transformers")  # rank 16 by default: the adapter's 4 wins
    with open_policy(cfg, tiny_model_dir, placement=CPU, adapter_dir=tmp_path / "adapter") as session:
        assert (session.cfg.lora.rank, session.cfg.lora.alpha) == (4, 8.0)
        got = {n: p for n, p in session.model.named_parameters() if "lora_" in n}
        assert got.keys() == want.keys() and all(torch.equal(got[n], want[n]) for n in want)


def test_sample_and_score_draws_k_per_prompt_and_scores_each(tiny_model_dir: Path) -> None:
    cfg = GRPOConfig(rollout_engine="merged")
    rows = [{"prompt": "1+1="}, {"prompt": "2+2="}, {"prompt": "3+3="}]
    sampling = Sampling(2, 5, 1.0, 1.0, seed=4)
    with open_policy(cfg, tiny_model_dir, placement=CPU) as session:
        prompts = session.prompts(rows)
        scored = sample_and_score(
            session.engine, prompts, rows, [DigitShare(), Half()], sampling, weights=[1.0, 2.0], row_numbers=[7, 8, 9]
        )
        again = sample_and_score(session.engine, prompts, rows, [DigitShare()], sampling)
    assert len(scored.texts) == 6 and again.texts == scored.texts  # the samples are a function of the Sampling
    assert scored.prompt_tokens == [len(p) for p in prompts for _ in range(2)]  # the tiny tokenizer: a char a token
    assert all(0 < n <= 5 for n in scored.completion_tokens) and len(scored.truncated) == 6
    assert all(n == 5 for n, t in zip(scored.completion_tokens, scored.truncated, strict=True) if t)  # cut at the cap
    digits = torch.tensor(scored.graded[0].scores, dtype=torch.float64)
    half = torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0], dtype=torch.float64)  # None counts as not applicable
    assert torch.equal(scored.rewards, (digits + 2.0 * half).float())
    assert scored.scores.errors == ["grader 'half' on training row 8: no"]  # sample 2 is row 8's first
    assert scored.grading_seconds >= 0 and scored.sampling_seconds > 0
