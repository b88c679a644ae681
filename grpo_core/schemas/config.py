"""The training configuration a job runs with: validated by the API before queueing, run as-is by the worker.

This module imports pydantic only (never torch or transformers), so the API can validate exactly the config the
worker will execute without pulling the training stack into its image. A test asserts that.

Field defaults follow DeepSeekMath's GRPO (Shao et al., 2024, arXiv:2402.03300, §4.1) scaled down to what a
LoRA run on a small model needs; every range is checked here so a bad value is a 422 at submission, not a
failure an hour into a GPU run.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from grpo_core.schemas.monitoring import MonitoringConfig as MonitoringConfig
from grpo_core.schemas.monitoring import PreflightConfig as PreflightConfig
from grpo_core.schemas.presets import LORA_LEARNING_RATE, expand

# The choices of the config, named once: the functions that implement them take these types too.
Recipe = Literal["deepseekmath", "r1_zero", "dapo", "dr_grpo", "gspo", "gfpo", "rloo", "reinforce_pp"]
Estimator = Literal["grpo", "rloo", "reinforce_pp_baseline"]  # grpo_core.rewards.advantages
Scale = Literal["group", "batch", "none"]  # grpo_core.rewards.advantages
RewardAggregation = Literal["sum_then_normalize", "normalize_then_sum"]  # grpo_core.rewards.combine
# grpo_core.update.loss
LossAggregation = Literal["seq_mean_token_mean", "token_mean", "seq_mean_token_sum_norm", "bnpo"]
ImportanceSamplingLevel = Literal["token", "sequence"]  # grpo_core.update.loss
OffPolicyCorrection = Literal["tis", "mis"]  # grpo_core.update.correction
KLEstimator = Literal["k1", "k2", "k3"]  # grpo_core.update.loss
GFPOMetric = Literal["length", "reward_per_token"]  # grpo_core.rollout.sampling
LRScheduler = Literal["constant", "linear", "cosine"]  # grpo_core.update.schedule
RolloutEngineName = Literal["auto", "merged", "transformers", "vllm"]  # grpo_core.rollout.engines
Sharding = Literal["replicate", "fsdp"]  # grpo_core.hardware.sharding
WeightSync = Literal["auto", "lora", "merged"]  # grpo_core.rollout.engines.vllm_engine
Precision = Literal["auto", "fp32", "bf16"]  # grpo_core.hardware.device
ReasoningEffort = Literal["default", "low", "medium", "high"]

# "auto" beside a number, spelt as a one-value enum in the schema (a JSON-schema const beside an integer makes the
# generated client refuse every number: openapi-python-client checks the const without trying the integer first).
Auto = Annotated[Literal["auto"], WithJsonSchema({"type": "string", "enum": ["auto"]})]

_AUTO_FIELDS = {
    "n_epochs",
    "batch_size",
    "learning_rate",
    "group_size",
    "max_completion_tokens",
    "eval_interval",
    "eval_samples",
    "learning_rate_multiplier",
    "compute_multiplier",
}


# A LoRA learning rate: about 10x full fine-tuning's (Schulman et al., 2025, "LoRA Without Regret";
# grpo_core.schemas.presets scales the recipes' the same way); bench/learning.py measures what 1e-5 and 1e-4 do on
# SmolLM2-135M (docs/benchmarks.md, "Learning per second").
DEFAULT_LEARNING_RATE = LORA_LEARNING_RATE


class LoraConfig(BaseModel):
    """Low-rank adapter shape (Hu et al., 2021, arXiv:2106.09685). The adapter is what users download."""

    model_config = ConfigDict(extra="forbid")

    rank: int = Field(16, ge=1, le=256, description="LoRA rank r.")
    alpha: float = Field(32.0, gt=0, le=1024, description="LoRA scaling numerator; the update is scaled by alpha/r.")
    dropout: float = Field(0.0, ge=0.0, lt=1.0, description="Dropout on the LoRA input.")
    target_modules: list[str] | Literal["all-linear"] = Field(
        "all-linear",
        description="Module names to adapt, or 'all-linear' for every linear layer but the head.",
    )


class AlgorithmConfig(BaseModel):
    """What GRPO computes: the objective, the advantages, the sampling distribution, the rewards' combination,
    the optimizer and its schedule, the adapter. Two runs that agree on these fields (and the seed, data and
    grader) train the same model, up to floating-point rounding, whatever their execution fields say.

    The objective (Shao et al., 2024, eq. 3) per prompt q with G sampled completions o_i:
        J = 1/G Σ_i 1/|o_i| Σ_t [ min(ρ_it Â_i, clip(ρ_it, 1-ε, 1+ε_high) Â_i) - β KL_k3(π_θ || π_ref)_it ]
    with ρ = π_θ/π_old per token and Â_i = (r_i - mean_g r) / (std_g r + 1e-4).
    """

    model_config = ConfigDict(extra="forbid")

    # the recipes and their sources: grpo_core.schemas.presets
    recipe: Recipe | None = Field(None, description="A named recipe that fills every field you do not set.")
    group_size: int = Field(8, ge=2, le=256, description="G: completions sampled per prompt.")
    batch_size: int = Field(4, ge=1, le=256, description="Prompts per optimizer step (the step uses batch_size×G).")
    learning_rate: float = Field(
        DEFAULT_LEARNING_RATE,
        gt=0,
        le=1e-2,
        description="AdamW learning rate for the LoRA weights. The default and the recipes' values are LoRA "
        "learning rates: about 10x what full fine-tuning would use (a recipe's is its paper's x 10).",
    )
    # OpenAI's reinforcement hyperparameters, so an OpenAI RFT job body runs unchanged (api/services/openai_compat).
    learning_rate_multiplier: float = Field(
        1.0,
        gt=0,
        le=1000,
        description="OpenAI's knob: the optimizer runs at learning_rate × learning_rate_multiplier ('auto' = 1).",
    )
    beta: float = Field(
        0.04,
        ge=0,
        le=10,
        description="β: k3 KL coefficient against the base model (adapter disabled). 0 skips it.",
    )
    epsilon: float = Field(0.2, gt=0, le=1, description="ε: lower clip of the importance ratio (PPO).")
    epsilon_high: float | None = Field(
        None, gt=0, le=10, description="Upper clip (DAPO's clip-higher, 0.28); defaults to epsilon."
    )
    delta: float | None = Field(
        None, gt=1, le=100, description="Two-sided clip (TRL's delta): caps the unclipped ratio at delta."
    )
    importance_sampling_level: ImportanceSamplingLevel = Field(
        "token", description="'sequence' uses GSPO's length-normalised sequence ratio (Zheng et al., 2025)."
    )
    kl_estimator: KLEstimator = Field(
        "k3", description="Per-token KL estimate against the reference (Schulman, 2020); k3 as in GRPO."
    )
    kl_importance_weighted: bool = Field(
        False,
        description="TRL's use_bias_correction_kl (on by default in TRL 1.16): multiply each token's KL estimate by "
        "the importance ratio π_θ/π_old (unclipped, with its gradient; GSPO's sequence ratio at "
        "importance_sampling_level 'sequence'), so the KL gradient is the unbiased reverse-KL gradient "
        "(DeepSeek-V3.2, 2025). It changes the gradient even on-policy, where the ratio is 1 in value. "
        "Set it true to reproduce a TRL run with beta > 0.",
    )
    loss_aggregation: LossAggregation = Field(
        "seq_mean_token_mean",
        description="GRPO's per-sequence mean; DAPO's token mean over the step; Dr. GRPO's sum / (B·max tokens); "
        "BNPO's per-micro-batch token mean.",
    )
    advantage_estimator: Estimator = Field(
        "grpo", description="Group baseline (GRPO), leave-one-out (RLOO) or REINFORCE++-baseline."
    )
    scale_rewards: Scale = Field(
        "group",
        description="Divide advantages by the group's reward std (GRPO), the batch's (Lite-PPO), or not "
        "at all (Dr. GRPO).",
    )
    entropy_coef: float = Field(
        0.0, ge=0, le=1, description="Entropy bonus α: the loss gets −α·H per token (aggregated like the loss)."
    )
    top_entropy_quantile: float = Field(
        1.0,
        gt=0,
        le=1,
        description="ρ of the 80/20 rule (Wang et al., 2025): policy loss only on the ρ share of "
        "tokens with the highest entropy in each micro-batch; 1 keeps all.",
    )
    mask_truncated_completions: bool = Field(
        False, description="DAPO's overlong filtering: completions that hit the length cap get no loss."
    )
    overlong_buffer_fraction: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="DAPO's soft overlong punishment: the last fraction of max_completion_tokens "
        "costs up to 1 reward, linearly.",
    )
    overlong_penalty: float = Field(1.0, ge=0, le=100, description="Scale of the soft overlong punishment.")
    dynamic_sampling: bool = Field(
        False,
        description="DAPO's dynamic sampling: drop groups whose grader rewards are all equal (no signal) and "
        "sample more prompts until batch_size groups with signal are collected.",
    )
    dynamic_sampling_max_rounds: int = Field(
        3,
        ge=1,
        le=64,
        description="Cap on sampling rounds per step for dynamic sampling (DAPO's max_num_gen_batches); when "
        "reached, the step trains on the groups it has.",
    )
    gfpo_sample_size: int | None = Field(
        None,
        ge=3,
        le=1024,
        description="GFPO (Shrivastava et al., 2025): sample this many completions per prompt and keep the "
        "group_size best by gfpo_metric; advantages are computed over the kept ones.",
    )
    gfpo_metric: GFPOMetric = Field(
        "length", description="GFPO's filter: keep the shortest completions, or the highest reward per token."
    )
    reward_weights: list[float] | None = Field(
        None, description="One weight per grader (TRL's reward_weights); default 1 each."
    )
    reward_aggregation: RewardAggregation = Field(
        "sum_then_normalize",
        description="Weighted sum then advantages (GRPO), or per-grader group normalisation then a weighted "
        "sum whitened over the batch (GDPO).",
    )
    tis_cap: float | None = Field(
        2.0,
        ge=1,
        le=100,
        description="Truncated importance sampling (Yao et al., 2025) for engine/trainer log-prob mismatch: the "
        "per-token loss is weighted by min(π_trainer/π_engine, tis_cap); applies to the merged and vLLM engines "
        "(the transformers engine samples with the trainer's own weights); null disables. With "
        "off_policy_correction 'mis', C bounds the band [1/C, C] outside which a token (or sample) is masked.",
    )
    max_staleness: int = Field(
        0,
        ge=0,
        le=8,
        description="Asynchronous GRPO: 0 samples, scores and updates in turn (exact). k > 0 runs the sampler in "
        "its own process beside the trainer, so the next batches are sampled while the current update runs; a "
        "batch trains on samples at most k policy versions old (verl's one-step-off at 1, prime-rl's "
        "max_off_policy_steps). The merged engine then runs in a process of its own; vLLM, whose engine has its "
        "own process already, gets each step's adapter by LoRA hot swap. The off-policy gap is corrected by "
        "off_policy_correction and always measured.",
    )
    off_policy_correction: OffPolicyCorrection = Field(
        "tis",
        description="How the importance weight π_trainer/π_sampler is bounded: 'tis' truncates it at tis_cap (Yao "
        "et al., 2025), 'mis' masks the tokens (or samples) whose weight leaves [1/tis_cap, tis_cap] (verl's "
        "rejection sampling).",
    )
    off_policy_level: ImportanceSamplingLevel = Field(
        "token",
        description="The importance weight per token, or one per sample: the product of its tokens' ratios.",
    )
    n_epochs: int = Field(1, ge=1, le=100, description="Passes over the training file; ignored when max_steps is set.")
    max_steps: int | None = Field(None, ge=1, le=1_000_000, description="Optimizer steps; overrides n_epochs.")
    max_completion_tokens: int = Field(128, ge=1, le=32768, description="Longest completion sampled.")
    max_prompt_tokens: int = Field(
        1024, ge=8, le=131072, description="Prompts longer than this are rejected (when the job is created)."
    )
    chat_template_kwargs: dict[str, str | int | float | bool | None] = Field(
        default_factory=dict,
        description="Extra variables for the model's chat template when prompts are rendered, e.g. "
        '{"enable_thinking": false} for Qwen3 (transformers\' apply_chat_template keyword arguments).',
    )
    temperature: float = Field(
        1.0, gt=0, le=2.0, description="Sampling temperature; also divides the logits when scoring log-probs."
    )
    top_p: float = Field(1.0, gt=0, le=1.0, description="Nucleus sampling.")
    lr_scheduler: LRScheduler = Field(
        "constant", description="Learning-rate decay after warmup (over steps × num_iterations updates)."
    )
    warmup_ratio: float = Field(0.0, ge=0, le=0.5, description="Share of the updates spent warming up linearly.")
    num_iterations: int = Field(
        1,
        ge=1,
        le=16,
        description="μ: optimizer updates per sampled batch (PPO epochs); > 1 makes the ratio "
        "and clipping matter and costs one extra no-grad forward for the old log-probs.",
    )
    weight_decay: float = Field(0.0, ge=0, le=1.0, description="AdamW weight decay.")
    max_grad_norm: float = Field(1.0, gt=0, le=1e6, description="Gradient clipping by global norm.")
    lora: LoraConfig = Field(default_factory=LoraConfig)


class ExecutionConfig(BaseModel):
    """How and where the run is carried out: which engine samples, in which precision, in what micro-batches.
    None of these changes what is optimized (bf16 changes the rounding: see ``precision``)."""

    model_config = ConfigDict(extra="forbid")

    device: str = Field(
        "auto",
        pattern=r"^(auto|cpu|cuda(:[0-9]{1,2})?)$",
        description="Where the job trains: auto = the worker's GPU (cuda:N) when it has one, else its CPU; an "
        "explicit 'cpu', 'cuda' or 'cuda:N' is honoured, or the job fails with a clear error on a worker without it.",
    )
    precision: Precision = Field(
        "auto",
        description="bf16: base weights stored in bf16, LoRA weights and optimizer in fp32, forward/backward under "
        "bf16 autocast, a bf16 sampler; fp32 is exact. auto = bf16 on GPUs that have it and on CPUs whose measured "
        "bf16 matmul is at least 1.5x fp32 (AMX, AVX512-BF16), fp32 elsewhere; the job's `execution` shows the "
        "value chosen.",
    )
    rollout_engine: RolloutEngineName = Field(
        "auto",
        description="Who samples: merged = a copy of the policy with the adapter folded into its weights, in the "
        "sampling precision, with a lean decode loop (fastest in-process; costs the adapted layers' weights "
        "once more); transformers = the trainer's own model through generate() (no copy, exact log-probs); "
        "vllm = a vLLM engine (optional extra); auto = vllm on a GPU when it is installed, merged otherwise.",
    )
    pool_exact: bool = Field(
        False,
        description="On a worker shared with other jobs of the same base model (docs/pooling.md): true samples this "
        "job's rollouts alone, in turn, so its adapter is bit-identical to the job run alone; false lets them share "
        "one decode with the other jobs' rollouts (faster; each row equal to alone within rounding).",
    )
    vllm_weight_sync: WeightSync = Field(
        "auto",
        description="How the vLLM engine gets each step's policy: LoRA hot swap (fast on GPU), merged weights "
        "(fast on vLLM's CPU build, whose LoRA kernels are slow), or auto (merged on CPU, LoRA elsewhere).",
    )
    vllm_gpu_memory_utilization: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="Share of the GPU's memory the colocated vLLM engine may take (weights, activations, KV cache); "
        "null = auto: with sleep mode what is free after the model is loaded, less 3 GiB, at most 0.8 (the engine "
        "and the update take turns); without it what is left after the training's own estimated need, at most 0.5.",
    )
    vllm_sleep_mode: bool | None = Field(
        None,
        description="Put the colocated vLLM engine to sleep during each update (its KV cache freed, its weights "
        "moved to host memory or dropped and reloaded), so the update gets that memory. null = auto: on a GPU "
        "(vLLM's CPU build has no sleep mode).",
    )
    sampler_cuda_graphs: bool = Field(
        True,
        description="The merged sampler on a GPU records its decode step as a CUDA graph per batch-size bucket, once "
        "per job, and replays it per token (models with full attention; others decode eagerly). false: always "
        "decode eagerly.",
    )
    micro_batch_size: Auto | Annotated[int, Field(ge=1, le=4096)] = Field(
        "auto",
        description="Sequences per forward/backward; the gradient equals the full-batch one whatever the value. "
        "auto = sized from the GPU's free memory after the model is loaded; 8 on a CPU.",
    )
    max_tokens_per_micro_batch: Auto | Annotated[int, Field(ge=16, le=1_048_576)] = Field(
        "auto",
        description="Tokens per packed forward/backward (``packing``): rows are concatenated without padding up to "
        "this many, a prompt shared by its rows counted once; a row longer than it runs alone. auto = on a GPU "
        "with fused_lm_head, what 70% of the free memory holds (at most 65536); otherwise micro_batch_size "
        "sequences at their longest (max_prompt_tokens + max_completion_tokens), the padded micro-batch's memory.",
    )
    packing: bool = Field(
        True,
        description="Run the update's forward/backward passes on packed micro-batches: each micro-batch's rows "
        "concatenated with no padding, positions restarting per row, attention that never crosses rows, a prompt "
        "shared by its G completions computed once. The gradient is the same. Models it is not checked for "
        "(sliding-window attention, post-processed logits) and FSDP sharding run padded micro-batches instead, "
        "as does false.",
    )
    fused_lm_head: bool = Field(
        True,
        description="Compute the LM head fused with the per-token log-prob, a chunk of positions at a time (each "
        "chunk's logits recomputed in the backward), so no (tokens × vocabulary) logits tensor exists beyond one "
        "chunk. The numbers are the same; false materialises all the logits at once.",
    )
    compile_update: bool = Field(
        False,
        description="Run the update's decoder layers under torch.compile (dynamic shapes, compiled once per worker "
        "process, then cached on disk). It pays on long jobs and large models; the compilation costs more than "
        "it saves on a short job of a small model, hence off. No effect with sharding: fsdp.",
    )
    capture_update: bool | None = Field(
        None,
        description="Replay the update's packed passes as CUDA graphs: each micro-batch padded to one of a few "
        "token buckets (within 1/8), each bucket's reference, policy forward and backward captured once, then "
        "launched as one graph each. null = auto: on a GPU with packing, except with gradient checkpointing, "
        "compile_update, an adapter peft runs itself, or a vLLM engine that sleeps on the same GPU (the graphs keep "
        "their memory between updates). true pads to buckets wherever packing runs (on a CPU without graphs); "
        "false runs every pass eagerly. A capture that fails falls back to eager passes with a warning.",
    )
    gradient_checkpointing: bool | None = Field(
        None,
        description="Recompute each layer's activations in the backward pass instead of keeping them: far less "
        "memory for about a third more update compute. null = auto: on a GPU where the update's micro-batch "
        "(micro_batch_size, or 8 rows with auto) does not fit in memory without it; never on a CPU.",
    )
    sharding: Sharding = Field(
        "replicate",
        description="With several devices (resources.devices × nodes > 1): replicate = every rank holds the whole "
        "model and the LoRA gradients are all-reduced (DDP's collective); fsdp = the training copy's frozen base "
        "weights are sharded over the ranks with FSDP2 (fully_shard per decoder layer; the adapter and its "
        "optimizer state, a few MB, stay whole), for models whose training does not fit on one device. The maths "
        "is the same either way; fsdp samples with the merged engine (the transformers and vLLM engines are "
        "refused with it). No effect on one device.",
    )

    @property
    def micro_batch(self) -> int:
        """The micro-batch size in use; ``auto`` is replaced by a number when the run starts
        (grpo_core.hardware.memory)."""
        if self.micro_batch_size == "auto":
            raise RuntimeError("micro_batch_size 'auto' must be resolved before the update (grpo_core.hardware.memory)")
        return self.micro_batch_size


class OpenAICompatFields(BaseModel):
    """OpenAI's reinforcement hyperparameters that have no meaning for GRPO on open models: accepted so an OpenAI
    RFT job body runs unchanged, and a value other than the default gets a warn event (api.jobs.openai_compat).
    ``learning_rate_multiplier`` does act and is an algorithm field."""

    model_config = ConfigDict(extra="forbid")

    reasoning_effort: ReasoningEffort = Field(
        "default",
        description="OpenAI's field, accepted for compatibility; no effect here (open base models have no effort "
        "setting: bound reasoning with max_completion_tokens). A value other than 'default' gets a warn event.",
    )
    compute_multiplier: float = Field(
        1.0,
        gt=0,
        le=1000,
        description="OpenAI's field, accepted for compatibility; no effect here (exploration is set explicitly by "
        "group_size and batch_size). A value other than 1 ('auto') gets a warn event.",
    )


class GRPOConfig(AlgorithmConfig, ExecutionConfig, MonitoringConfig, OpenAICompatFields):
    """Hyperparameters of one GRPO run: one flat JSON object (the job's ``hyperparameters``), whose fields are
    grouped in code by what they are: ``AlgorithmConfig`` (what is computed), ``ExecutionConfig`` (how it runs),
    ``MonitoringConfig`` (what is reported and kept), ``OpenAICompatFields`` (accepted, no effect).
    """

    model_config = ConfigDict(extra="forbid")

    @property
    def micro_batch_tokens(self) -> int:
        """The packed micro-batch's token budget; ``auto`` is ``micro_batch`` sequences at their longest (the
        memory the padded micro-batch is sized for), unless the run resolved it (grpo_core.hardware.memory)."""
        if self.max_tokens_per_micro_batch == "auto":
            return self.micro_batch * (self.max_prompt_tokens + self.max_completion_tokens)
        return self.max_tokens_per_micro_batch

    @model_validator(mode="before")
    @classmethod
    def _expand(cls, data: object) -> object:
        """OpenAI's hyperparameters accept "auto" (our default); a ``recipe`` fills the fields not given."""
        if isinstance(data, dict):
            return expand({k: v for k, v in data.items() if not (v == "auto" and k in _AUTO_FIELDS)})
        return data

    @model_validator(mode="after")
    def _consistent(self) -> GRPOConfig:
        if self.epsilon_high is not None and self.epsilon_high < self.epsilon:
            raise ValueError("epsilon_high must be >= epsilon")
        if self.gfpo_sample_size is not None and self.gfpo_sample_size <= self.group_size:
            raise ValueError("gfpo_sample_size must be larger than group_size (the completions kept per prompt)")
        if self.reward_aggregation == "normalize_then_sum" and self.advantage_estimator != "grpo":
            raise ValueError("reward_aggregation 'normalize_then_sum' (GDPO) needs advantage_estimator 'grpo'")
        if self.reward_weights is not None and not self.reward_weights:
            raise ValueError("reward_weights must list one weight per grader")
        if self.sharding == "fsdp" and self.rollout_engine in ("transformers", "vllm"):
            raise ValueError(
                f"sharding 'fsdp' samples with the merged engine: rollout_engine '{self.rollout_engine}' is not "
                "supported with it (use 'auto' or 'merged', or sharding 'replicate')"
            )
        if self.max_staleness and self.rollout_engine == "transformers":
            raise ValueError(
                f"max_staleness {self.max_staleness} samples beside the trainer, and rollout_engine 'transformers' "
                "samples with the trainer's own model: use 'auto', 'merged' or 'vllm', or max_staleness 0"
            )
        if self.max_staleness and self.rollout_engine == "vllm" and self.vllm_weight_sync == "merged":
            raise ValueError(
                f"max_staleness {self.max_staleness} hands the vLLM engine each step's adapter alone (a LoRA hot "
                "swap), never the merged weights: use vllm_weight_sync 'lora' or 'auto'"
            )
        if self.max_staleness and self.vllm_sleep_mode:
            raise ValueError(
                "vllm_sleep_mode puts the engine to sleep during each update, and max_staleness > 0 samples during "
                "the update: leave vllm_sleep_mode unset"
            )
        if self.max_staleness and self.sharding == "fsdp":
            raise ValueError("max_staleness > 0 is not supported with sharding 'fsdp' (use sharding 'replicate')")
        if self.effective_learning_rate > 1e-2:
            raise ValueError(
                f"learning_rate × learning_rate_multiplier = {self.effective_learning_rate:g} is above 0.01"
            )
        return self

    @property
    def effective_learning_rate(self) -> float:
        """What the optimizer runs at: ``learning_rate`` (ours, or the recipe's) scaled by OpenAI's multiplier."""
        return self.learning_rate * self.learning_rate_multiplier

    @property
    def clip_high(self) -> float:
        return self.epsilon if self.epsilon_high is None else self.epsilon_high

    def total_steps(self, n_rows: int) -> int:
        """Optimizer steps the run will take over ``n_rows`` prompts (a partial last batch counts as a step)."""
        if self.max_steps is not None:
            return self.max_steps
        return self.n_epochs * -(-n_rows // self.batch_size)


# Fields a service operator may cap, with the companion fields capped by the same limit.
CAPPABLE = {
    "max_completion_tokens": ("max_completion_tokens",),
    "max_prompt_tokens": ("max_prompt_tokens",),
    "group_size": ("group_size", "gfpo_sample_size"),
    "batch_size": ("batch_size",),
}


def apply_caps(cfg: GRPOConfig, caps: dict[str, int | None]) -> tuple[GRPOConfig, list[str]]:
    """``cfg`` with the service's limits applied, and one message per lowered field for the job's events.

    The capped config is validated again, so a combination the caps make invalid is reported, not run.
    """
    values = cfg.model_dump()
    messages = []
    for cap_name, fields in CAPPABLE.items():
        limit = caps.get(cap_name)
        for f in fields:
            if limit is not None and values.get(f) is not None and values[f] > limit:
                messages.append(f"{f} capped from {values[f]} to {limit} by this service")
                values[f] = limit
    if not messages:
        return cfg, []
    values.pop("recipe", None)  # already expanded; re-expanding would not override the capped values anyway
    capped = GRPOConfig.model_validate(values)
    return capped.model_copy(update={"recipe": cfg.recipe}), messages
