"""The rollout-engine protocol: what the training loop needs from whatever samples completions.

The loop calls ``generate`` (one step's prompts × G), ``suspend`` (before each update: an engine that holds GPU
memory for sampling may hand it to the update) and ``sync`` (after each optimizer step, so the next ``generate``
samples from the updated policy). Engines:

- ``transformers`` (grpo_core.rollout.engines.hf): the trainer's own model and ``generate``; no weight copy, no sync
  cost, and its log-probs are the trainer's, so no importance-sampling correction is needed.
- ``merged`` (grpo_core.rollout.engines.merged, the default): a plain copy of the policy with the adapter folded into
  its weights, in the sampling precision, and a lean decode loop (grpo_core.rollout.engines.decode); ``sync`` re-merges
  the adapted layers in place. Reports ``sampling_logp`` (its rounding differs from the trainer's).
- ``vllm`` (grpo_core.rollout.engines.vllm_engine, optional extra): a separate inference engine holding the base
  weights; ``sync`` hands it the current LoRA adapter. Its kernels give slightly different log-probs than the
  trainer's forward, so it reports ``Rollout.sampling_logp`` and the loss applies truncated importance sampling.

With ``max_staleness`` > 0 the engine samples beside the trainer (grpo_core.rollout.pipeline): the merged engine in
a process of its own (grpo_core.sampler_process), vLLM behind a lock with its syncs deferred to the
next call (grpo_core.rollout.engines.shared); every rollout then carries ``Rollout.versions``. Either may sit on the
trainer's device or on one of its own (grpo_core.hardware.rollout_placement).

This module defines what an engine is and imports none of them: ``grpo_core.policy.make_engine`` builds one by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from grpo_core.rollout.batch import Rollout


@dataclass(frozen=True)
class Sampling:
    """How a rollout samples: ``group_size`` completions per prompt of at most ``max_new_tokens`` tokens, at
    ``temperature`` (0: greedy) within the ``top_p`` nucleus, from the random stream ``seed``.

    ``first_row``: the step-wide number of this call's first row. Row j of the call draws from the stream of row
    ``first_row + j``, so a rank that samples a share of the step's prompts draws what one process sampling the
    whole step would have drawn for them (grpo_core.hardware.distributed).

    ``step_prompts``: when this call samples a share, the step's whole prompt list. The merged engine then computes
    in the shapes one process would use (the prompts left-padded to the widest of the step, an attention mask
    exactly when the step needs one): a kernel's summation order can depend on the sequence width (the SIMD lane a
    key position falls in), so a share padded to its own width computes the same rows with other roundings, which
    the importance correction and Adam carry into the weights (tests/distributed/test_exactness.py holds a world of
    two to one process's weights)."""

    group_size: int
    max_new_tokens: int
    temperature: float
    top_p: float
    seed: int
    first_row: int = 0
    step_prompts: tuple[str, ...] = ()


class RolloutEngine(Protocol):
    name: str

    def generate(self, prompts: list[str], sampling: Sampling) -> Rollout:
        """``group_size`` completions per prompt, rows grouped by prompt (row i belongs to prompt i // G)."""
        ...

    def continue_turns(
        self, sequences: list[list[int]], sampling: Sampling, rows: list[int]
    ) -> list[tuple[list[int], list[float] | None]]:
        """One more turn of each multi-turn trajectory (its whole token sequence so far, grpo_core.rollout.agent): the
        sampled ids up to and including the stop id, and their sampling log-probs (None where the trainer's own
        forward sampled them). ``rows``: each trajectory's step-wide number (keys its noise); ``group_size`` is
        ignored (one continuation each) and ``seed`` is the turn's."""
        ...

    def sync(self, model: Any, step: int) -> None:
        """Make the next ``generate`` sample from ``model``'s current weights (called after each update)."""
        ...

    def suspend(self) -> None:
        """Free what sampling holds on the device until the next ``sync`` or ``generate`` (called before each
        update); engines with nothing to free do nothing."""
        ...

    def close(self) -> None: ...
