"""Shared pieces of the training tests: a callbacks recorder, a tiny arithmetic dataset, a dense grader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grpo_core.rewards.base import GraderResult
from grpo_core.rewards.graders import build_grader
from grpo_core.schemas.graders import StringCheckGrader
from grpo_core.schemas.metrics import Execution, StepMetrics


class Recorder:
    """grpo_core.run.Callbacks that keeps everything it is told."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.steps: list[StepMetrics] = []
        self.ckpts: list[tuple[int, Path, bool]] = []
        self.best: list[int] = []  # steps whose checkpoint was marked best
        self.messages: list[tuple[str, str]] = []
        self.stop_after = stop_after
        self.execution: Execution | None = None

    def on_start(self, execution: Execution) -> None:
        self.execution = execution

    def on_message(self, message: str, level: str = "info") -> None:
        self.messages.append((level, message))

    def on_step(self, metrics: StepMetrics) -> None:
        self.steps.append(metrics)

    def on_checkpoint(self, step: int, path: Path, metrics: StepMetrics, *, final: bool, best: bool) -> None:
        self.ckpts.append((step, path, final))
        if best:
            self.best.append(step)

    def should_stop(self) -> bool:
        return self.stop_after is not None and len(self.steps) >= self.stop_after


ROWS = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in range(3) for b in range(3)]
GRADER = build_grader(StringCheckGrader(reference="{{item.answer}}", operation="like"))


class DigitShare:
    """A dense reward (share of digits in the text), so every group has variance and a gradient."""

    name = "digits"

    def score(self, texts: list[str], rows: list[dict[str, Any]]) -> GraderResult:
        return GraderResult([sum(c.isdigit() for c in t) / max(len(t), 1) for t in texts], [None] * len(texts))


class StartsWithDigit:
    """A sparse reward: about half of the tiny model's groups of 4 have no signal (dynamic sampling drops them)."""

    name = "starts_with_digit"

    def score(self, texts: list[str], rows: list[dict[str, Any]]) -> GraderResult:
        return GraderResult([1.0 if t[:1].isdigit() else 0.0 for t in texts], [None] * len(texts))


def nontrivial_policy(model_dir: Path, *, fused_lora: bool = True, **lora: Any) -> Any:
    """The policy of ``model_dir`` with its LoRA B drawn from N(0, 0.1) (B = 0 at init would hide an adapter that
    is not applied); ``lora``: LoraConfig fields (target_modules…)."""
    import torch

    from grpo_core.policy import load_policy
    from grpo_core.schemas.config import GRPOConfig, LoraConfig

    cfg = GRPOConfig(lora=LoraConfig(**lora)) if lora else GRPOConfig()
    model, _ = load_policy(model_dir, cfg, seed=0, fused_lora=fused_lora)
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.1)
    return model
