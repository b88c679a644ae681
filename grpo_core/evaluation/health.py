"""Training-health monitors: the failure modes GRPO runs are known for, turned into warnings a user can act on.

Each check looks at the step metrics (grpo_core.metrics) and the history; a warning is emitted when a condition
starts and again only after it has cleared, so a long run is not flooded. Thresholds live in ``HealthConfig``.
The checks follow trends, not only absolute values, because that is what a run's curves show first (checked on
recorded real runs: tests/data/health/):

- entropy collapse: mean token entropy below ``entropy_min``, or fallen by ``entropy_drop`` (a share) from its
  mean over the first steps, over the last ``window`` steps that updated the policy (a step whose groups all
  had equal rewards computes no entropy) -> the policy stopped exploring; groups become all-equal and learning
  stalls. Raise temperature, add entropy_coef, or lower learning_rate.
- length inflation: mean completion length above ``length_growth`` × its mean over the first steps ->
  a length-correlated reward; add a length penalty or overlong punishment, or cap max_completion_tokens.
- no signal: the share of groups with equal rewards, averaged over the last ``window`` steps, above
  ``zero_std_max`` -> most steps update nothing; the task is too easy (or too hard) for the model now: keep the
  best checkpoint, use harder data, raise group_size, or use dynamic sampling.
- KL blow-up: KL to the base model above ``kl_max`` -> lower learning_rate or raise beta.
- sampler/trainer mismatch: the mismatch KL (grpo_core.update.correction) above ``mismatch_kl_max``, or ten times its
  mean over the first steps and above a tenth of ``mismatch_kl_max`` -> the samples come from a policy too far from
  the trained one (stale weights at max_staleness > 0, or a sampler whose numerics drifted); lower max_staleness or
  learning_rate, or mask the outliers (off_policy_correction 'mis').
- reward hacking: train reward up while validation reward went down across the last two evaluations by more
  than ``hacking_z`` standard errors of that difference (each evaluation's from its per-prompt scores; as if the
  two were independent, which overstates the noise of two evaluations of the same prompts, so it errs towards
  silence) -> inspect the samples; the grader is probably being gamed. At one standard error a healthy run
  would be flagged about one evaluation in six; a drop within the noise of a small validation set says nothing.
"""

from __future__ import annotations

import math
from collections import deque

from grpo_core.schemas.health import HealthConfig
from grpo_core.schemas.metrics import StepMetrics


class HealthMonitor:
    BASELINE_STEPS = 3

    def __init__(self, cfg: HealthConfig) -> None:
        self.cfg = cfg
        self.lengths: list[float] = []
        self.entropies: list[float] = []  # of the steps that updated the policy
        self.zero_std: deque[float] = deque(maxlen=cfg.window)
        # (train reward, validation reward, its standard error) at each evaluation
        self.evals: list[tuple[float, float, float | None]] = []
        self.active: set[str] = set()
        self.mismatch: list[float] = []  # off_policy.mismatch_kl of each step that measured it

    def _flag(self, kind: str, condition: bool, message: str) -> list[str]:
        if condition and kind not in self.active:
            self.active.add(kind)
            return [message]
        if not condition:
            self.active.discard(kind)
        return []

    def check(self, m: StepMetrics) -> list[str]:
        out = self._entropy(m)
        c, step = self.cfg, m.step
        self.lengths.append(m.completion_length_mean)
        start = sum(self.lengths[: self.BASELINE_STEPS]) / min(len(self.lengths), self.BASELINE_STEPS)
        out += self._flag(
            "length",
            len(self.lengths) > self.BASELINE_STEPS and m.completion_length_mean > c.length_growth * start,
            f"Completion length inflation at step {step}: {m.completion_length_mean:.0f} tokens vs {start:.0f} "
            "at the start. The reward may favour length: add a length penalty or overlong_buffer_fraction.",
        )
        self.zero_std.append(m.frac_reward_zero_std)
        share = sum(self.zero_std) / len(self.zero_std)
        idle = sum(f >= 1.0 for f in self.zero_std)
        out += self._flag(
            "zero_std",
            len(self.zero_std) == c.window and share > c.zero_std_max,
            f"No learning signal at step {step}: {share:.0%} of groups had equal rewards over the last {c.window} "
            f"steps ({idle} of them updated nothing). The task is too easy or too hard for the model now: keep the "
            "best checkpoint, use harder data, raise group_size, or use dynamic_sampling.",
        )
        out += self._flag(
            "kl",
            m.kl is not None and m.kl > c.kl_max,
            f"KL blow-up at step {step}: KL to the base model {m.kl or 0:.3f} > {c.kl_max}. "
            "Lower learning_rate or raise beta.",
        )
        return out + self._mismatch(m) + self._hacking(m)

    def _mismatch(self, m: StepMetrics) -> list[str]:
        """The sampler drifting from the trainer: the importance correction is then doing most of the work."""
        if m.off_policy is None:
            return []
        kl, c = m.off_policy.mismatch_kl, self.cfg
        self.mismatch.append(kl)
        start = sum(self.mismatch[: self.BASELINE_STEPS]) / min(len(self.mismatch), self.BASELINE_STEPS)
        grown = len(self.mismatch) > self.BASELINE_STEPS and kl > 10 * start and kl > c.mismatch_kl_max / 10
        lag = max((int(k) for k in m.off_policy.staleness), default=0)
        return self._flag(
            "mismatch",
            kl > c.mismatch_kl_max or grown,
            f"Sampler/trainer mismatch at step {m.step}: KL(π_sampler ‖ π_trainer) = {kl:.4f} (first steps "
            f"{start:.4f}, samples up to {lag} step(s) old), {m.off_policy.bounded_share:.1%} of tokens had their "
            "importance weight bounded. Lower max_staleness or learning_rate, or use off_policy_correction 'mis'.",
        )

    def _entropy(self, m: StepMetrics) -> list[str]:
        c = self.cfg
        updated = m.entropy > 0 or m.frac_reward_zero_std < 1.0
        if updated:
            self.entropies.append(m.entropy)
        if 0 < m.entropy < c.entropy_min:
            return self._flag(
                "entropy",
                True,
                f"Entropy collapse at step {m.step}: mean token entropy {m.entropy:.3f} < {c.entropy_min}. "
                "Raise temperature, add entropy_coef, or lower learning_rate.",
            )
        if not updated:
            return []  # no entropy measured: the warning's state stands
        if len(self.entropies) < self.BASELINE_STEPS + c.window:
            return self._flag("entropy", False, "")
        start = sum(self.entropies[: self.BASELINE_STEPS]) / self.BASELINE_STEPS
        recent = sum(self.entropies[-c.window :]) / c.window
        fallen = start > 0 and recent < (1 - c.entropy_drop) * start
        return self._flag(
            "entropy",
            fallen,
            f"Entropy collapse at step {m.step}: mean token entropy {recent:.3f} over the last {c.window} updating "
            f"steps, {1 - recent / start:.0%} below its start ({start:.3f}); the policy stopped exploring. If the "
            "reward has plateaued, raise temperature, add entropy_coef, or lower learning_rate.",
        )

    def _hacking(self, m: StepMetrics) -> list[str]:
        s = m.scores
        if s.train_reward_mean is not None and s.valid_reward_mean is not None:
            self.evals.append((s.train_reward_mean, s.valid_reward_mean, s.valid_reward_stderr))
        if len(self.evals) < 2:
            return self._flag("hacking", False, "")
        (train0, valid0, se0), (train1, valid1, se1) = self.evals[-2], self.evals[-1]
        # the standard error of the difference of two independent means; unknown (older runs): any drop counts
        noise = self.cfg.hacking_z * math.hypot(se0, se1) if se0 is not None and se1 is not None else 0.0
        drop = valid0 - valid1
        hacking = train1 > train0 and drop > noise
        within = f" (beyond its noise, {self.cfg.hacking_z:g} standard errors = {noise:.3f})" if noise else ""
        return self._flag(
            "hacking",
            hacking,
            f"Possible reward hacking at step {m.step}: train reward rose to {train1:.3f} while validation reward fell "
            f"to {valid1:.3f}, by {drop:.3f}{within}. Inspect the samples; the grader may be gamed.",
        )
