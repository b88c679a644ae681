"""What one GRPO step reports, typed once: grpo_core.metrics fills it, the worker posts it, the API serves it.

The shape is OpenAI's metrics event (``data.step``, ``data.scores``, ``data.timing``, ``data.errors``) with GRPO's
own numbers beside it, so ``openapi.json``, the generated client, the ``rft`` CLI and the dashboard all read the
same field names, and renaming one breaks a type check or a test rather than a chart. Like grpo_core.schemas.config this
module imports pydantic only (no torch), so the API validates exactly what the trainer produced.

Fields that count tokens count completion tokens up to and including EOS. Rates are shares in [0, 1].
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Level = Literal["info", "warn", "error"]  # of an event: a message of the run, or a step's metrics


class GraderMetrics(BaseModel):
    """One reward column of the step (a grader, or a part of a ``multi`` grader as ``{name}.{part}``)."""

    name: str
    train_reward_mean: float | None = Field(description="Mean score over the samples the grader applied to.")
    train_reward_std: float | None = None
    error_rate: float | None = Field(
        None, description="Share of samples whose scoring failed (scored 0); null for a multi grader's part."
    )
    not_applicable_rate: float | None = Field(None, description="Share of samples the grader returned None for.")


class Scores(BaseModel):
    train_reward_mean: float | None = Field(
        description="Mean total reward (weighted grader sum, shaping included) over scorable samples; null when "
        "no sample of the step could be scored."
    )
    graders: list[GraderMetrics] = Field(default_factory=list)
    valid_reward_mean: float | None = Field(
        None, description="Validation: mean weighted reward (every eval_interval steps and after the last)."
    )
    valid_pass_at_k: float | None = Field(
        None, description="Validation: mean over prompts of the best of eval_samples rewards (pass@k for 0/1)."
    )
    valid_reward_stderr: float | None = Field(
        None,
        description="Validation: standard error of valid_reward_mean over the prompts (each the mean of its "
        "eval_samples rewards); a change between evaluations smaller than this is noise.",
    )


class GraderErrorRate(BaseModel):
    name: str
    train_error_rate: float


class StepErrors(BaseModel):
    graders: list[GraderErrorRate] = Field(default_factory=list, description="Graders that scored, with errors.")
    samples: list[str] = Field(
        default_factory=list, description="The first few scoring errors, each naming the training row."
    )


class StepTiming(BaseModel):
    """Seconds of wall-clock time."""

    sampling: float
    scoring: float
    training: float = Field(description="Policy update, engine sync included.")
    full_iteration: float
    eval: float | None = Field(None, description="Validation, on the steps that ran it.")
    waiting: float | None = Field(
        None,
        description="max_staleness > 0: seconds the trainer waited for this step's batch (sampling and scoring ran "
        "beside the previous update; their seconds are the sampler's own).",
    )


class Timing(BaseModel):
    step: StepTiming


class SamplingStats(BaseModel):
    """Dynamic sampling and GFPO bookkeeping: how many groups were sampled, dropped for no signal, trained on."""

    sampling_rounds: int
    groups_sampled: int
    groups_dropped: int
    groups_trained: int


class OffPolicyStats(BaseModel):
    """How far the policy that sampled a step's batch was from the one trained on it (grpo_core.update.correction):
    reported whenever a separate engine sampled (merged, vLLM), at every max_staleness."""

    max_staleness: int = Field(description="The job's bound k: 0 = synchronous.")
    staleness: dict[str, int] = Field(
        description="Samples trained on at each lag: {versions behind the trained policy: samples}."
    )
    stale_samples_dropped: int = Field(0, description="Samples older than max_staleness, dropped before the update.")
    mismatch_kl: float = Field(
        description="Mean per-token k3 estimate of KL(π_sampler ‖ π_trainer) over the loss tokens: rounding and "
        "kernels at k = 0, plus the policy's drift over the lag at k > 0."
    )
    is_weight_mean: float = Field(description="Mean importance weight π_trainer/π_sampler after its bound.")
    is_weight_max: float = Field(description="Largest importance weight before its bound.")
    bounded_share: float = Field(
        description="Share of loss tokens whose weight the bound changed: truncated at tis_cap (TIS) or masked (MIS)."
    )


class TrajectorySpan(BaseModel):
    """A stretch of a multi-turn episode's tokens after the prompt: the model's turn (trained on) or what the
    environment and the template added (masked out of the loss)."""

    kind: Literal["model", "tool", "user"] = Field(description="Who wrote it: the model, a tool, the environment.")
    text: str = Field(description="The tokens decoded (special tokens kept, so template markup shows).")
    tokens: int
    trained: bool = Field(description="Whether these tokens carry loss (only the model's do).")


class EpisodeStats(BaseModel):
    """Multi-turn episodes of the step (jobs with an environment)."""

    turns_mean: float = Field(description="Assistant turns per episode.")
    turns_max: int
    tool_calls_mean: float = Field(description="Tool (or respond) calls per episode.")
    tool_error_rate: float = Field(description="Share of calls that raised, timed out or returned no usable value.")
    tool_call_errors: int = Field(description="Malformed calls: not JSON, an unknown tool, arguments off the schema.")
    tool_seconds_mean: float | None = Field(None, description="Seconds of one call inside the sandbox.")
    tool_seconds_max: float | None = None
    truncated_rate: float = Field(description="Share of episodes ended by max_turns, max_total_tokens or length.")
    environment_tokens_mean: float = Field(description="Tokens per episode added by tools, environment, template.")


class Sample(BaseModel):
    """One logged rollout: the prompt, the completion, its rewards (total and per grader) and advantage."""

    prompt: Any = Field(description="The training row's prompt (a string) or messages (a list).")
    completion: str
    reward: float | None = Field(description="Total reward; null when no grader could score it.")
    rewards: dict[str, float | None] = Field(default_factory=dict, description="Per grader; null = not applicable.")
    advantage: float
    completion_tokens: int | None = None
    policy_version: int | None = Field(
        None,
        description="max_staleness > 0: the policy version (optimizer steps taken) whose weights sampled it; null "
        "when the weights being trained sampled it.",
    )
    trajectory: list[TrajectorySpan] | None = Field(
        None, description="A multi-turn episode turn by turn (null for single-turn jobs)."
    )
    ended: str | None = Field(
        None, description="How the episode ended: done, max_turns, max_total_tokens or length (multi-turn only)."
    )


class MemoryStats(BaseModel):
    """Peak memory of the step, for sizing micro_batch_size and gradient_checkpointing."""

    device: str = Field(description="Where the job trains: cuda:N or cpu.")
    peak_allocated_gb: float = Field(
        description="GiB. On a GPU: the peak of memory allocated to tensors during this step (PyTorch's caching "
        "allocator; the vLLM engine's own reservation is not included). On a CPU: the process's peak resident "
        "set so far (a high-water mark that never goes down)."
    )
    device_total_gb: float | None = Field(None, description="The GPU's total memory in GiB; null on a CPU.")


class StepMetrics(BaseModel):
    """One optimizer step. ``kl`` is null when β = 0; per-token means are over the tokens that were updated."""

    step: int
    total_steps: int
    scores: Scores
    errors: StepErrors = Field(default_factory=StepErrors)
    timing: Timing
    train_reward_std: float
    frac_reward_zero_std: float = Field(
        description="Share of groups whose rewards are all equal (no learning signal); with dynamic sampling, the "
        "share of sampled groups dropped for it."
    )
    loss: float = Field(description="The step's loss (the last of the num_iterations updates).")
    kl: float | None = Field(description="Mean per-token KL to the base model; null when beta is 0.")
    clip_ratio: float = Field(description="Share of updated tokens whose ratio was clipped.")
    clip_ratio_low: float = Field(description="... clipped at 1 - epsilon (negative advantage).")
    clip_ratio_high: float = Field(description="... clipped at 1 + epsilon_high (positive advantage).")
    entropy: float = Field(description="Mean per-token entropy of the policy.")
    tokens_per_second: float = Field(description="Completion tokens per wall-clock second of the whole step.")
    grad_norm: float = Field(description="Global gradient norm before clipping.")
    learning_rate: float = Field(description="The scheduler's current rate.")
    completion_length_mean: float
    completion_length_min: int
    completion_length_max: int
    truncated_ratio: float = Field(description="Share of completions with no EOS within max_completion_tokens.")
    overlong_penalty_mean: float = Field(description="DAPO's soft overlong punishment (0 when off).")
    advantage_mean: float
    advantage_std: float
    tokens: int = Field(description="Completion tokens sampled in the step.")
    sampling: SamplingStats
    samples: list[Sample] = Field(default_factory=list, description="The first sample_log_count rollouts.")
    warnings: list[str] = Field(default_factory=list, description="Health warnings raised at this step.")
    importance_sampling_ratio_mean: float | None = Field(
        None, description="Separate sampling engine only: mean truncated importance weight π_trainer/π_engine."
    )
    sampling_logp_difference_max: float | None = Field(
        None, description="Separate sampling engine only: largest |log π_trainer − log π_engine| of a token."
    )
    memory: MemoryStats | None = Field(None, description="Peak memory of the step.")
    off_policy: OffPolicyStats | None = Field(
        None, description="Sampler/trainer mismatch and staleness; null when the trainer's own forward sampled."
    )
    episodes: EpisodeStats | None = Field(None, description="Multi-turn episodes (jobs with an environment).")

    def message(self) -> str:
        """One line for a job's event log."""
        s = self.scores
        reward = "n/a" if s.train_reward_mean is None else f"{s.train_reward_mean:.3f}"
        valid = "" if s.valid_reward_mean is None else f", validation mean reward={s.valid_reward_mean:.3f}"
        return (
            f"Step {self.step}/{self.total_steps}: train mean reward={reward}{valid}, loss={self.loss:.4f}, "
            f"completion length={self.completion_length_mean:.1f}, {self.timing.step.full_iteration:.1f}s"
        )

    def summary(self) -> CheckpointMetrics:
        """What a checkpoint keeps of the step it was saved at."""
        return CheckpointMetrics(
            step=self.step,
            train_reward_mean=self.scores.train_reward_mean,
            valid_reward_mean=self.scores.valid_reward_mean,
            loss=self.loss,
            kl=self.kl,
            completion_length_mean=self.completion_length_mean,
        )


ResolvedPrecision = Literal["fp32", "bf16"]


def where_it_trains(device: str, device_name: str, precision: str, reason: str, threads: int | None) -> str:
    """'cuda:0 (NVIDIA H100 80GB HBM3, bf16)' or 'CPU, 16 threads, bf16 (bf16 matmul 6.1x fp32)': the words of the
    worker's first event and of the execution message, written once."""
    if device.startswith("cuda"):
        return f"{device} ({device_name}, {precision})"
    return f"CPU, {threads} threads, {precision} ({reason})"


ResolvedEngine = Literal["merged", "transformers", "vllm"]


class Execution(BaseModel):
    """Where and how the worker runs the job: what the ``auto`` hyperparameters resolved to on its hardware."""

    device: str = Field(description="cuda:N or cpu.")
    device_name: str = Field(description="The GPU's name (e.g. 'NVIDIA H100 80GB HBM3') or the CPU's model name.")
    precision: ResolvedPrecision
    precision_reason: str = Field(description="Why: 'requested', 'bf16 tensor cores', 'bf16 matmul 6.2x fp32', …")
    threads: int | None = Field(None, description="torch's CPU threads (the CPUs the worker may use); null on a GPU.")
    micro_batch_size: int
    packing: bool = Field(
        False, description="The update runs packed micro-batches (no padding); false: padded ones of micro_batch_size."
    )
    max_tokens_per_micro_batch: int | None = Field(None, description="The packed micro-batch's token budget.")
    fused_lm_head: bool = Field(False, description="The LM head runs in chunks fused with the log-prob.")
    gradient_checkpointing: bool
    capture_update: bool = Field(
        False, description="The update's packed passes replay as CUDA graphs at a few token buckets."
    )
    rollout_engine: ResolvedEngine
    vllm_gpu_memory_utilization: float | None = Field(None, description="The vLLM engine's share of the GPU.")
    vllm_sleep_mode: bool | None = Field(
        None, description="Whether the vLLM engine sleeps during each update (its GPU memory handed to the update)."
    )
    device_total_gb: float | None = Field(None, description="The GPU's total memory in GiB; null on a CPU.")
    world_size: int = Field(1, description="Training processes (ranks) of this attempt, over all nodes.")
    ranks_per_node: int = Field(1, description="Ranks on each node; `device` and `threads` are rank 0's.")
    backend: Literal["nccl", "gloo"] | None = Field(None, description="torch.distributed backend; null for one rank.")
    sharding: Literal["replicate", "fsdp"] | None = Field(
        None,
        description="How the ranks hold the model: whole on each, or its base weights sharded with FSDP2; null for "
        "one rank.",
    )

    max_staleness: int = Field(
        0,
        description="0: synchronous (sample, score, update in turn). k > 0: the sampler runs beside the trainer and "
        "a batch trains on samples at most k policy versions old.",
    )
    sampler: str | None = Field(
        None,
        description="max_staleness > 0: where the sampler runs, e.g. 'its own process, 1 thread (cores 1)'; null when "
        "it runs in the training process.",
    )
    pool_tenants: int | None = Field(
        None,
        description="The job shares its worker's resident base model: how many tenants (jobs) the worker held when "
        "it started, itself included (each trains its own adapter, in turn); null: a worker of its own.",
    )
    pool_together: bool = Field(
        False,
        description="A pooled job's rollouts and updates are computed together with the other tenants' (equal to "
        "the job alone within rounding); false: in turn, bit for bit as alone.",
    )

    def message(self) -> str:
        """One line for the job's event log."""
        where = where_it_trains(self.device, self.device_name, self.precision, self.precision_reason, self.threads)
        if self.world_size > 1:
            nodes = self.world_size // max(self.ranks_per_node, 1)
            layout = f"{nodes} node{'s' * (nodes > 1)} × {self.ranks_per_node}, {self.backend}"
            layout += ", base weights sharded with FSDP2" if self.sharding == "fsdp" else ""
            where += f" × {self.world_size} ranks ({layout})"
        engine: str = self.rollout_engine
        if self.vllm_gpu_memory_utilization is not None:
            sleeps = ", asleep during updates" if self.vllm_sleep_mode else ""
            engine += f" ({self.vllm_gpu_memory_utilization:.0%} of the GPU{sleeps})"
        gc = "on" if self.gradient_checkpointing else "off"
        if self.packing:
            batches = f"packed micro-batches of up to {self.max_tokens_per_micro_batch} tokens"
        else:
            batches = f"micro_batch_size {self.micro_batch_size}"
        head = ", LM head fused with the log-prob" if self.fused_lm_head else ""
        head += ", passes replayed as CUDA graphs" if self.capture_update else ""
        mode = "synchronous"
        if self.pool_tenants is not None and self.pool_together:
            mode += f", together with the other jobs of a worker shared by {self.pool_tenants} (alone within rounding)"
        elif self.pool_tenants is not None:
            mode += f", in turn with the other jobs of a worker shared by {self.pool_tenants} (exact: as alone)"
        if self.max_staleness:
            mode = f"asynchronous, samples at most {self.max_staleness} step(s) old, sampler in {self.sampler}"
        return f"Training on {where}: {batches}{head}, gradient checkpointing {gc}, rollout engine {engine}, {mode}"


class CheckpointMetrics(BaseModel):
    """The step a checkpoint was saved at, in brief (a pause before any step saves none of these)."""

    step: int | None = None
    train_reward_mean: float | None = None
    valid_reward_mean: float | None = Field(None, description="Set when the step ran validation.")
    loss: float | None = None
    kl: float | None = None
    completion_length_mean: float | None = None
