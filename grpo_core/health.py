"""Training-health monitors: the failure modes GRPO runs are known for, turned into warnings a user can act on.

Each check looks at the step metrics (grpo_core.metrics) and the history; a warning is emitted when a condition
starts and again only after it has cleared, so a long run is not flooded. Thresholds live in ``HealthConfig``.

- entropy collapse: mean token entropy below ``entropy_min`` (the policy stopped exploring; groups become
  all-equal and learning stalls) -> raise temperature, add entropy_coef, or lower learning_rate.
- length inflation: mean completion length above ``length_growth`` × its mean over the first steps ->
  a length-correlated reward; add a length penalty or overlong punishment, or cap max_completion_tokens.
- no signal: share of zero-std groups above ``zero_std_max`` for ``window`` steps -> the task is too easy or too
  hard for this model; change the data, raise group_size, or use dynamic sampling.
- KL blow-up: KL to the base model above ``kl_max`` -> lower learning_rate or raise beta.
- reward hacking: train reward up while validation reward went down across the last two evaluations ->
  inspect the samples; the grader is probably being gamed.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from grpo_core.metrics_schema import StepMetrics


class HealthConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entropy_min: float = Field(0.05, ge=0, description="Warn when mean token entropy falls below this.")
    length_growth: float = Field(2.5, gt=1, description="Warn when completions grow past this × their start.")
    zero_std_max: float = Field(0.9, gt=0, le=1, description="Warn when this share of groups has no signal...")
    window: int = Field(5, ge=1, le=1000, description="...for this many consecutive steps.")
    kl_max: float = Field(1.0, gt=0, description="Warn when the KL to the base model exceeds this.")


class HealthMonitor:
    BASELINE_STEPS = 3

    def __init__(self, cfg: HealthConfig) -> None:
        self.cfg = cfg
        self.lengths: list[float] = []
        self.zero_std_run = 0
        self.evals: list[tuple[float, float]] = []  # (train reward, validation reward) at each evaluation
        self.active: set[str] = set()

    def _flag(self, kind: str, condition: bool, message: str) -> list[str]:
        if condition and kind not in self.active:
            self.active.add(kind)
            return [message]
        if not condition:
            self.active.discard(kind)
        return []

    def check(self, m: StepMetrics) -> list[str]:
        c, out = self.cfg, []
        step = m.step
        out += self._flag(
            "entropy",
            0 < m.entropy < c.entropy_min,
            f"Entropy collapse at step {step}: mean token entropy {m.entropy:.3f} < {c.entropy_min}. "
            "Raise temperature, add entropy_coef, or lower learning_rate.",
        )
        self.lengths.append(m.completion_length_mean)
        start = sum(self.lengths[: self.BASELINE_STEPS]) / min(len(self.lengths), self.BASELINE_STEPS)
        out += self._flag(
            "length",
            len(self.lengths) > self.BASELINE_STEPS and m.completion_length_mean > c.length_growth * start,
            f"Completion length inflation at step {step}: {m.completion_length_mean:.0f} tokens vs {start:.0f} "
            "at the start. The reward may favour length: add a length penalty or overlong_buffer_fraction.",
        )
        self.zero_std_run = self.zero_std_run + 1 if m.frac_reward_zero_std > c.zero_std_max else 0
        out += self._flag(
            "zero_std",
            self.zero_std_run >= c.window,
            f"No learning signal: over {c.zero_std_max:.0%} of groups had equal rewards for {self.zero_std_run} "
            "steps. The task is too easy or too hard for the model; adjust the data or raise group_size.",
        )
        out += self._flag(
            "kl",
            m.kl is not None and m.kl > c.kl_max,
            f"KL blow-up at step {step}: KL to the base model {m.kl or 0:.3f} > {c.kl_max}. "
            "Lower learning_rate or raise beta.",
        )
        train, valid = m.scores.train_reward_mean, m.scores.valid_reward_mean
        if train is not None and valid is not None:
            self.evals.append((train, valid))
        hacking = (
            len(self.evals) >= 2 and self.evals[-1][0] > self.evals[-2][0] and self.evals[-1][1] < self.evals[-2][1]
        )
        out += self._flag(
            "hacking",
            hacking,
            f"Possible reward hacking at step {step}: train reward rose to {self.evals[-1][0]:.3f} while validation "
            f"reward fell to {self.evals[-1][1]:.3f}. Inspect the samples; the grader may be gamed."
            if hacking
            else "",
        )
        return out
