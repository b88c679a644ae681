# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.grpo_config_advantage_estimator import GRPOConfigAdvantageEstimator, check_grpo_config_advantage_estimator
from ..models.grpo_config_gfpo_metric import GRPOConfigGfpoMetric, check_grpo_config_gfpo_metric
from ..models.grpo_config_importance_sampling_level import (
    GRPOConfigImportanceSamplingLevel,
    check_grpo_config_importance_sampling_level,
)
from ..models.grpo_config_kl_estimator import GRPOConfigKlEstimator, check_grpo_config_kl_estimator
from ..models.grpo_config_loss_aggregation import GRPOConfigLossAggregation, check_grpo_config_loss_aggregation
from ..models.grpo_config_lr_scheduler import GRPOConfigLrScheduler, check_grpo_config_lr_scheduler
from ..models.grpo_config_max_tokens_per_micro_batch_type_0 import (
    GRPOConfigMaxTokensPerMicroBatchType0,
    check_grpo_config_max_tokens_per_micro_batch_type_0,
)
from ..models.grpo_config_micro_batch_size_type_0 import (
    GRPOConfigMicroBatchSizeType0,
    check_grpo_config_micro_batch_size_type_0,
)
from ..models.grpo_config_off_policy_correction import (
    GRPOConfigOffPolicyCorrection,
    check_grpo_config_off_policy_correction,
)
from ..models.grpo_config_off_policy_level import GRPOConfigOffPolicyLevel, check_grpo_config_off_policy_level
from ..models.grpo_config_precision import GRPOConfigPrecision, check_grpo_config_precision
from ..models.grpo_config_reasoning_effort import GRPOConfigReasoningEffort, check_grpo_config_reasoning_effort
from ..models.grpo_config_recipe_type_0 import GRPOConfigRecipeType0, check_grpo_config_recipe_type_0
from ..models.grpo_config_reward_aggregation import GRPOConfigRewardAggregation, check_grpo_config_reward_aggregation
from ..models.grpo_config_rollout_engine import GRPOConfigRolloutEngine, check_grpo_config_rollout_engine
from ..models.grpo_config_scale_rewards import GRPOConfigScaleRewards, check_grpo_config_scale_rewards
from ..models.grpo_config_sharding import GRPOConfigSharding, check_grpo_config_sharding
from ..models.grpo_config_vllm_weight_sync import GRPOConfigVllmWeightSync, check_grpo_config_vllm_weight_sync
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.grpo_config_chat_template_kwargs import GRPOConfigChatTemplateKwargs
    from ..models.health_config import HealthConfig
    from ..models.lora_config import LoraConfig
    from ..models.preflight_config import PreflightConfig


T = TypeVar("T", bound="GRPOConfig")


@_attrs_define
class GRPOConfig:
    """Hyperparameters of one GRPO run: one flat JSON object (the job's ``hyperparameters``), whose fields are
    grouped in code by what they are: ``AlgorithmConfig`` (what is computed), ``ExecutionConfig`` (how it runs),
    ``MonitoringConfig`` (what is reported and kept), ``OpenAICompatFields`` (accepted, no effect).

        Attributes:
            advantage_estimator (GRPOConfigAdvantageEstimator | Unset): Group baseline (GRPO), leave-one-out (RLOO) or
                REINFORCE++-baseline. Default: 'grpo'.
            batch_size (int | Unset): Prompts per optimizer step (the step uses batch_size×G). Default: 4.
            beta (float | Unset): β: k3 KL coefficient against the base model (adapter disabled). 0 skips it. Default: 0.04.
            capture_update (bool | None | Unset): Replay the update's packed passes as CUDA graphs: each micro-batch padded
                to one of a few token buckets (within 1/8), each bucket's reference, policy forward and backward captured once,
                then launched as one graph each. null = auto: on a GPU with packing, except with gradient checkpointing,
                compile_update, an adapter peft runs itself, or a vLLM engine that sleeps on the same GPU (the graphs keep their
                memory between updates). true pads to buckets wherever packing runs (on a CPU without graphs); false runs every
                pass eagerly. A capture that fails falls back to eager passes with a warning.
            chat_template_kwargs (GRPOConfigChatTemplateKwargs | Unset): Extra variables for the model's chat template when
                prompts are rendered, e.g. {"enable_thinking": false} for Qwen3 (transformers' apply_chat_template keyword
                arguments).
            checkpoint_interval (int | Unset): Save and upload the adapter every N steps; 0 = only at the end. Default: 0.
            compile_update (bool | Unset): Run the update's decoder layers under torch.compile (dynamic shapes, compiled
                once per worker process, then cached on disk). It pays on long jobs and large models; the compilation costs more
                than it saves on a short job of a small model, hence off. No effect with sharding: fsdp. Default: False.
            compute_multiplier (float | Unset): OpenAI's field, accepted for compatibility; no effect here (exploration is
                set explicitly by group_size and batch_size). A value other than 1 ('auto') gets a warn event. Default: 1.0.
            delta (float | None | Unset): Two-sided clip (TRL's delta): caps the unclipped ratio at delta.
            device (str | Unset): Where the job trains: auto = the worker's GPU (cuda:N) when it has one, else its CPU; an
                explicit 'cpu', 'cuda' or 'cuda:N' is honoured, or the job fails with a clear error on a worker without it.
                Default: 'auto'.
            dynamic_sampling (bool | Unset): DAPO's dynamic sampling: drop groups whose grader rewards are all equal (no
                signal) and sample more prompts until batch_size groups with signal are collected. Default: False.
            dynamic_sampling_max_rounds (int | Unset): Cap on sampling rounds per step for dynamic sampling (DAPO's
                max_num_gen_batches); when reached, the step trains on the groups it has. Default: 3.
            entropy_coef (float | Unset): Entropy bonus α: the loss gets −α·H per token (aggregated like the loss). Default:
                0.0.
            epsilon (float | Unset): ε: lower clip of the importance ratio (PPO). Default: 0.2.
            epsilon_high (float | None | Unset): Upper clip (DAPO's clip-higher, 0.28); defaults to epsilon.
            eval_interval (int | Unset): Score the validation file every N steps (and always after the last step); 0 = only
                after the last step. Needs a validation_file. Default: 0.
            eval_samples (int | Unset): Completions per validation prompt. Default: 1.
            eval_temperature (float | Unset): 0 = greedy validation decoding. Default: 0.0.
            fused_lm_head (bool | Unset): Compute the LM head fused with the per-token log-prob, a chunk of positions at a
                time (each chunk's logits recomputed in the backward), so no (tokens × vocabulary) logits tensor exists beyond
                one chunk. The numbers are the same; false materialises all the logits at once. Default: True.
            gfpo_metric (GRPOConfigGfpoMetric | Unset): GFPO's filter: keep the shortest completions, or the highest reward
                per token. Default: 'length'.
            gfpo_sample_size (int | None | Unset): GFPO (Shrivastava et al., 2025): sample this many completions per prompt
                and keep the group_size best by gfpo_metric; advantages are computed over the kept ones.
            gradient_checkpointing (bool | None | Unset): Recompute each layer's activations in the backward pass instead of
                keeping them: far less memory for about a third more update compute. null = auto: on a GPU where the update's
                micro-batch (micro_batch_size, or 8 rows with auto) does not fit in memory without it; never on a CPU.
            group_size (int | Unset): G: completions sampled per prompt. Default: 8.
            health (HealthConfig | Unset):
            importance_sampling_level (GRPOConfigImportanceSamplingLevel | Unset): 'sequence' uses GSPO's length-normalised
                sequence ratio (Zheng et al., 2025). Default: 'token'.
            kl_estimator (GRPOConfigKlEstimator | Unset): Per-token KL estimate against the reference (Schulman, 2020); k3
                as in GRPO. Default: 'k3'.
            kl_importance_weighted (bool | Unset): TRL's use_bias_correction_kl (on by default in TRL 1.16): multiply each
                token's KL estimate by the importance ratio π_θ/π_old (unclipped, with its gradient; GSPO's sequence ratio at
                importance_sampling_level 'sequence'), so the KL gradient is the unbiased reverse-KL gradient (DeepSeek-V3.2,
                2025). It changes the gradient even on-policy, where the ratio is 1 in value. Set it true to reproduce a TRL run
                with beta > 0. Default: False.
            learning_rate (float | Unset): AdamW learning rate for the LoRA weights. The default and the recipes' values are
                LoRA learning rates: about 10x what full fine-tuning would use (a recipe's is its paper's x 10). Default:
                0.0001.
            learning_rate_multiplier (float | Unset): OpenAI's knob: the optimizer runs at learning_rate ×
                learning_rate_multiplier ('auto' = 1). Default: 1.0.
            lora (LoraConfig | Unset): Low-rank adapter shape (Hu et al., 2021, arXiv:2106.09685). The adapter is what users
                download.
            loss_aggregation (GRPOConfigLossAggregation | Unset): GRPO's per-sequence mean; DAPO's token mean over the step;
                Dr. GRPO's sum / (B·max tokens); BNPO's per-micro-batch token mean. Default: 'seq_mean_token_mean'.
            lr_scheduler (GRPOConfigLrScheduler | Unset): Learning-rate decay after warmup (over steps × num_iterations
                updates). Default: 'constant'.
            mask_truncated_completions (bool | Unset): DAPO's overlong filtering: completions that hit the length cap get no
                loss. Default: False.
            max_completion_tokens (int | Unset): Longest completion sampled. Default: 128.
            max_grad_norm (float | Unset): Gradient clipping by global norm. Default: 1.0.
            max_grader_error_rate (float | Unset): Fail the job when a grader errors (raises, times out, returns a non-
                number) on more than this share of a step's completions; below it an error scores 0 and is counted in the
                metrics. Default: 0.8.
            max_prompt_tokens (int | Unset): Prompts longer than this are rejected (when the job is created). Default: 1024.
            max_staleness (int | Unset): Asynchronous GRPO: 0 samples, scores and updates in turn (exact). k > 0 runs the
                sampler in its own process beside the trainer, so the next batches are sampled while the current update runs; a
                batch trains on samples at most k policy versions old (verl's one-step-off at 1, prime-rl's
                max_off_policy_steps). The merged engine then runs in a process of its own; vLLM, whose engine has its own
                process already, gets each step's adapter by LoRA hot swap. The off-policy gap is corrected by
                off_policy_correction and always measured. Default: 0.
            max_steps (int | None | Unset): Optimizer steps; overrides n_epochs.
            max_tokens_per_micro_batch (GRPOConfigMaxTokensPerMicroBatchType0 | int | Unset): Tokens per packed
                forward/backward (``packing``): rows are concatenated without padding up to this many, a prompt shared by its
                rows counted once; a row longer than it runs alone. auto = on a GPU with fused_lm_head, what 70% of the free
                memory holds (at most 65536); otherwise micro_batch_size sequences at their longest (max_prompt_tokens +
                max_completion_tokens), the padded micro-batch's memory. Default: 'auto'.
            micro_batch_size (GRPOConfigMicroBatchSizeType0 | int | Unset): Sequences per forward/backward; the gradient
                equals the full-batch one whatever the value. auto = sized from the GPU's free memory after the model is loaded;
                8 on a CPU. Default: 'auto'.
            n_epochs (int | Unset): Passes over the training file; ignored when max_steps is set. Default: 1.
            num_iterations (int | Unset): μ: optimizer updates per sampled batch (PPO epochs); > 1 makes the ratio and
                clipping matter and costs one extra no-grad forward for the old log-probs. Default: 1.
            off_policy_correction (GRPOConfigOffPolicyCorrection | Unset): How the importance weight π_trainer/π_sampler is
                bounded: 'tis' truncates it at tis_cap (Yao et al., 2025), 'mis' masks the tokens (or samples) whose weight
                leaves [1/tis_cap, tis_cap] (verl's rejection sampling). Default: 'tis'.
            off_policy_level (GRPOConfigOffPolicyLevel | Unset): The importance weight per token, or one per sample: the
                product of its tokens' ratios. Default: 'token'.
            overlong_buffer_fraction (float | None | Unset): DAPO's soft overlong punishment: the last fraction of
                max_completion_tokens costs up to 1 reward, linearly.
            overlong_penalty (float | Unset): Scale of the soft overlong punishment. Default: 1.0.
            packing (bool | Unset): Run the update's forward/backward passes on packed micro-batches: each micro-batch's
                rows concatenated with no padding, positions restarting per row, attention that never crosses rows, a prompt
                shared by its G completions computed once. The gradient is the same. Models it is not checked for (sliding-
                window attention, post-processed logits) and FSDP sharding run padded micro-batches instead, as does false.
                Default: True.
            pool_exact (bool | Unset): On a worker shared with other jobs of the same base model (docs/pooling.md): true
                samples this job's rollouts alone, in turn, so its adapter is bit-identical to the job run alone; false lets
                them share one decode with the other jobs' rollouts (faster; each row equal to alone within rounding). Default:
                False.
            precision (GRPOConfigPrecision | Unset): bf16: base weights stored in bf16, LoRA weights and optimizer in fp32,
                forward/backward under bf16 autocast, a bf16 sampler; fp32 is exact. auto = bf16 on GPUs that have it and on
                CPUs whose measured bf16 matmul is at least 1.5x fp32 (AMX, AVX512-BF16), fp32 elsewhere; the job's `execution`
                shows the value chosen. Default: 'auto'.
            preflight (None | PreflightConfig | Unset): Probe the base model before training and report whether GRPO can
                learn (the job's readiness report); null: no probe. The job's top-level `preflight: true` sets the defaults.
            reasoning_effort (GRPOConfigReasoningEffort | Unset): OpenAI's field, accepted for compatibility; no effect here
                (open base models have no effort setting: bound reasoning with max_completion_tokens). A value other than
                'default' gets a warn event. Default: 'default'.
            recipe (GRPOConfigRecipeType0 | None | Unset): A named recipe that fills every field you do not set.
            reward_aggregation (GRPOConfigRewardAggregation | Unset): Weighted sum then advantages (GRPO), or per-grader
                group normalisation then a weighted sum whitened over the batch (GDPO). Default: 'sum_then_normalize'.
            reward_weights (list[float] | None | Unset): One weight per grader (TRL's reward_weights); default 1 each.
            rollout_engine (GRPOConfigRolloutEngine | Unset): Who samples: merged = a copy of the policy with the adapter
                folded into its weights, in the sampling precision, with a lean decode loop (fastest in-process; costs the
                adapted layers' weights once more); transformers = the trainer's own model through generate() (no copy, exact
                log-probs); vllm = a vLLM engine (optional extra); auto = vllm on a GPU when it is installed, merged otherwise.
                Default: 'auto'.
            sample_log_count (int | Unset): Rollouts per step kept in the metrics event for inspection. Default: 4.
            sampler_cuda_graphs (bool | Unset): The merged sampler on a GPU records its decode step as a CUDA graph per
                batch-size bucket, once per job, and replays it per token (models with full attention; others decode eagerly).
                false: always decode eagerly. Default: True.
            scale_rewards (GRPOConfigScaleRewards | Unset): Divide advantages by the group's reward std (GRPO), the batch's
                (Lite-PPO), or not at all (Dr. GRPO). Default: 'group'.
            sharding (GRPOConfigSharding | Unset): With several devices (resources.devices × nodes > 1): replicate = every
                rank holds the whole model and the LoRA gradients are all-reduced (DDP's collective); fsdp = the training copy's
                frozen base weights are sharded over the ranks with FSDP2 (fully_shard per decoder layer; the adapter and its
                optimizer state, a few MB, stay whole), for models whose training does not fit on one device. The maths is the
                same either way; fsdp samples with the merged engine (the transformers and vLLM engines are refused with it). No
                effect on one device. Default: 'replicate'.
            temperature (float | Unset): Sampling temperature; also divides the logits when scoring log-probs. Default: 1.0.
            tis_cap (float | None | Unset): Truncated importance sampling (Yao et al., 2025) for engine/trainer log-prob
                mismatch: the per-token loss is weighted by min(π_trainer/π_engine, tis_cap); applies to the merged and vLLM
                engines (the transformers engine samples with the trainer's own weights); null disables. With
                off_policy_correction 'mis', C bounds the band [1/C, C] outside which a token (or sample) is masked. Default:
                2.0.
            top_entropy_quantile (float | Unset): ρ of the 80/20 rule (Wang et al., 2025): policy loss only on the ρ share
                of tokens with the highest entropy in each micro-batch; 1 keeps all. Default: 1.0.
            top_p (float | Unset): Nucleus sampling. Default: 1.0.
            vllm_gpu_memory_utilization (float | None | Unset): Share of the GPU's memory the colocated vLLM engine may take
                (weights, activations, KV cache); null = auto: with sleep mode what is free after the model is loaded, less 3
                GiB, at most 0.8 (the engine and the update take turns); without it what is left after the training's own
                estimated need, at most 0.5.
            vllm_sleep_mode (bool | None | Unset): Put the colocated vLLM engine to sleep during each update (its KV cache
                freed, its weights moved to host memory or dropped and reloaded), so the update gets that memory. null = auto:
                on a GPU (vLLM's CPU build has no sleep mode).
            vllm_weight_sync (GRPOConfigVllmWeightSync | Unset): How the vLLM engine gets each step's policy: LoRA hot swap
                (fast on GPU), merged weights (fast on vLLM's CPU build, whose LoRA kernels are slow), or auto (merged on CPU,
                LoRA elsewhere). Default: 'auto'.
            warmup_ratio (float | Unset): Share of the updates spent warming up linearly. Default: 0.0.
            weight_decay (float | Unset): AdamW weight decay. Default: 0.0.
    """

    advantage_estimator: GRPOConfigAdvantageEstimator | Unset = "grpo"
    batch_size: int | Unset = 4
    beta: float | Unset = 0.04
    capture_update: bool | None | Unset = UNSET
    chat_template_kwargs: GRPOConfigChatTemplateKwargs | Unset = UNSET
    checkpoint_interval: int | Unset = 0
    compile_update: bool | Unset = False
    compute_multiplier: float | Unset = 1.0
    delta: float | None | Unset = UNSET
    device: str | Unset = "auto"
    dynamic_sampling: bool | Unset = False
    dynamic_sampling_max_rounds: int | Unset = 3
    entropy_coef: float | Unset = 0.0
    epsilon: float | Unset = 0.2
    epsilon_high: float | None | Unset = UNSET
    eval_interval: int | Unset = 0
    eval_samples: int | Unset = 1
    eval_temperature: float | Unset = 0.0
    fused_lm_head: bool | Unset = True
    gfpo_metric: GRPOConfigGfpoMetric | Unset = "length"
    gfpo_sample_size: int | None | Unset = UNSET
    gradient_checkpointing: bool | None | Unset = UNSET
    group_size: int | Unset = 8
    health: HealthConfig | Unset = UNSET
    importance_sampling_level: GRPOConfigImportanceSamplingLevel | Unset = "token"
    kl_estimator: GRPOConfigKlEstimator | Unset = "k3"
    kl_importance_weighted: bool | Unset = False
    learning_rate: float | Unset = 0.0001
    learning_rate_multiplier: float | Unset = 1.0
    lora: LoraConfig | Unset = UNSET
    loss_aggregation: GRPOConfigLossAggregation | Unset = "seq_mean_token_mean"
    lr_scheduler: GRPOConfigLrScheduler | Unset = "constant"
    mask_truncated_completions: bool | Unset = False
    max_completion_tokens: int | Unset = 128
    max_grad_norm: float | Unset = 1.0
    max_grader_error_rate: float | Unset = 0.8
    max_prompt_tokens: int | Unset = 1024
    max_staleness: int | Unset = 0
    max_steps: int | None | Unset = UNSET
    max_tokens_per_micro_batch: GRPOConfigMaxTokensPerMicroBatchType0 | int | Unset = "auto"
    micro_batch_size: GRPOConfigMicroBatchSizeType0 | int | Unset = "auto"
    n_epochs: int | Unset = 1
    num_iterations: int | Unset = 1
    off_policy_correction: GRPOConfigOffPolicyCorrection | Unset = "tis"
    off_policy_level: GRPOConfigOffPolicyLevel | Unset = "token"
    overlong_buffer_fraction: float | None | Unset = UNSET
    overlong_penalty: float | Unset = 1.0
    packing: bool | Unset = True
    pool_exact: bool | Unset = False
    precision: GRPOConfigPrecision | Unset = "auto"
    preflight: None | PreflightConfig | Unset = UNSET
    reasoning_effort: GRPOConfigReasoningEffort | Unset = "default"
    recipe: GRPOConfigRecipeType0 | None | Unset = UNSET
    reward_aggregation: GRPOConfigRewardAggregation | Unset = "sum_then_normalize"
    reward_weights: list[float] | None | Unset = UNSET
    rollout_engine: GRPOConfigRolloutEngine | Unset = "auto"
    sample_log_count: int | Unset = 4
    sampler_cuda_graphs: bool | Unset = True
    scale_rewards: GRPOConfigScaleRewards | Unset = "group"
    sharding: GRPOConfigSharding | Unset = "replicate"
    temperature: float | Unset = 1.0
    tis_cap: float | None | Unset = 2.0
    top_entropy_quantile: float | Unset = 1.0
    top_p: float | Unset = 1.0
    vllm_gpu_memory_utilization: float | None | Unset = UNSET
    vllm_sleep_mode: bool | None | Unset = UNSET
    vllm_weight_sync: GRPOConfigVllmWeightSync | Unset = "auto"
    warmup_ratio: float | Unset = 0.0
    weight_decay: float | Unset = 0.0

    def to_dict(self) -> dict[str, Any]:
        from ..models.preflight_config import PreflightConfig  # noqa: PLC0415

        advantage_estimator: str | Unset = UNSET
        if not isinstance(self.advantage_estimator, Unset):
            advantage_estimator = self.advantage_estimator

        batch_size = self.batch_size

        beta = self.beta

        capture_update: bool | None | Unset
        if isinstance(self.capture_update, Unset):
            capture_update = UNSET
        else:
            capture_update = self.capture_update

        chat_template_kwargs: dict[str, Any] | Unset = UNSET
        if not isinstance(self.chat_template_kwargs, Unset):
            chat_template_kwargs = self.chat_template_kwargs.to_dict()

        checkpoint_interval = self.checkpoint_interval

        compile_update = self.compile_update

        compute_multiplier = self.compute_multiplier

        delta: float | None | Unset
        if isinstance(self.delta, Unset):
            delta = UNSET
        else:
            delta = self.delta

        device = self.device

        dynamic_sampling = self.dynamic_sampling

        dynamic_sampling_max_rounds = self.dynamic_sampling_max_rounds

        entropy_coef = self.entropy_coef

        epsilon = self.epsilon

        epsilon_high: float | None | Unset
        if isinstance(self.epsilon_high, Unset):
            epsilon_high = UNSET
        else:
            epsilon_high = self.epsilon_high

        eval_interval = self.eval_interval

        eval_samples = self.eval_samples

        eval_temperature = self.eval_temperature

        fused_lm_head = self.fused_lm_head

        gfpo_metric: str | Unset = UNSET
        if not isinstance(self.gfpo_metric, Unset):
            gfpo_metric = self.gfpo_metric

        gfpo_sample_size: int | None | Unset
        if isinstance(self.gfpo_sample_size, Unset):
            gfpo_sample_size = UNSET
        else:
            gfpo_sample_size = self.gfpo_sample_size

        gradient_checkpointing: bool | None | Unset
        if isinstance(self.gradient_checkpointing, Unset):
            gradient_checkpointing = UNSET
        else:
            gradient_checkpointing = self.gradient_checkpointing

        group_size = self.group_size

        health: dict[str, Any] | Unset = UNSET
        if not isinstance(self.health, Unset):
            health = self.health.to_dict()

        importance_sampling_level: str | Unset = UNSET
        if not isinstance(self.importance_sampling_level, Unset):
            importance_sampling_level = self.importance_sampling_level

        kl_estimator: str | Unset = UNSET
        if not isinstance(self.kl_estimator, Unset):
            kl_estimator = self.kl_estimator

        kl_importance_weighted = self.kl_importance_weighted

        learning_rate = self.learning_rate

        learning_rate_multiplier = self.learning_rate_multiplier

        lora: dict[str, Any] | Unset = UNSET
        if not isinstance(self.lora, Unset):
            lora = self.lora.to_dict()

        loss_aggregation: str | Unset = UNSET
        if not isinstance(self.loss_aggregation, Unset):
            loss_aggregation = self.loss_aggregation

        lr_scheduler: str | Unset = UNSET
        if not isinstance(self.lr_scheduler, Unset):
            lr_scheduler = self.lr_scheduler

        mask_truncated_completions = self.mask_truncated_completions

        max_completion_tokens = self.max_completion_tokens

        max_grad_norm = self.max_grad_norm

        max_grader_error_rate = self.max_grader_error_rate

        max_prompt_tokens = self.max_prompt_tokens

        max_staleness = self.max_staleness

        max_steps: int | None | Unset
        if isinstance(self.max_steps, Unset):
            max_steps = UNSET
        else:
            max_steps = self.max_steps

        max_tokens_per_micro_batch: int | str | Unset
        if isinstance(self.max_tokens_per_micro_batch, Unset):
            max_tokens_per_micro_batch = UNSET
        elif isinstance(self.max_tokens_per_micro_batch, str):
            max_tokens_per_micro_batch = self.max_tokens_per_micro_batch
        else:
            max_tokens_per_micro_batch = self.max_tokens_per_micro_batch

        micro_batch_size: int | str | Unset
        if isinstance(self.micro_batch_size, Unset):
            micro_batch_size = UNSET
        elif isinstance(self.micro_batch_size, str):
            micro_batch_size = self.micro_batch_size
        else:
            micro_batch_size = self.micro_batch_size

        n_epochs = self.n_epochs

        num_iterations = self.num_iterations

        off_policy_correction: str | Unset = UNSET
        if not isinstance(self.off_policy_correction, Unset):
            off_policy_correction = self.off_policy_correction

        off_policy_level: str | Unset = UNSET
        if not isinstance(self.off_policy_level, Unset):
            off_policy_level = self.off_policy_level

        overlong_buffer_fraction: float | None | Unset
        if isinstance(self.overlong_buffer_fraction, Unset):
            overlong_buffer_fraction = UNSET
        else:
            overlong_buffer_fraction = self.overlong_buffer_fraction

        overlong_penalty = self.overlong_penalty

        packing = self.packing

        pool_exact = self.pool_exact

        precision: str | Unset = UNSET
        if not isinstance(self.precision, Unset):
            precision = self.precision

        preflight: dict[str, Any] | None | Unset
        if isinstance(self.preflight, Unset):
            preflight = UNSET
        elif isinstance(self.preflight, PreflightConfig):
            preflight = self.preflight.to_dict()
        else:
            preflight = self.preflight

        reasoning_effort: str | Unset = UNSET
        if not isinstance(self.reasoning_effort, Unset):
            reasoning_effort = self.reasoning_effort

        recipe: None | str | Unset
        if isinstance(self.recipe, Unset):
            recipe = UNSET
        elif isinstance(self.recipe, str):
            recipe = self.recipe
        else:
            recipe = self.recipe

        reward_aggregation: str | Unset = UNSET
        if not isinstance(self.reward_aggregation, Unset):
            reward_aggregation = self.reward_aggregation

        reward_weights: list[float] | None | Unset
        if isinstance(self.reward_weights, Unset):
            reward_weights = UNSET
        elif isinstance(self.reward_weights, list):
            reward_weights = self.reward_weights

        else:
            reward_weights = self.reward_weights

        rollout_engine: str | Unset = UNSET
        if not isinstance(self.rollout_engine, Unset):
            rollout_engine = self.rollout_engine

        sample_log_count = self.sample_log_count

        sampler_cuda_graphs = self.sampler_cuda_graphs

        scale_rewards: str | Unset = UNSET
        if not isinstance(self.scale_rewards, Unset):
            scale_rewards = self.scale_rewards

        sharding: str | Unset = UNSET
        if not isinstance(self.sharding, Unset):
            sharding = self.sharding

        temperature = self.temperature

        tis_cap: float | None | Unset
        if isinstance(self.tis_cap, Unset):
            tis_cap = UNSET
        else:
            tis_cap = self.tis_cap

        top_entropy_quantile = self.top_entropy_quantile

        top_p = self.top_p

        vllm_gpu_memory_utilization: float | None | Unset
        if isinstance(self.vllm_gpu_memory_utilization, Unset):
            vllm_gpu_memory_utilization = UNSET
        else:
            vllm_gpu_memory_utilization = self.vllm_gpu_memory_utilization

        vllm_sleep_mode: bool | None | Unset
        if isinstance(self.vllm_sleep_mode, Unset):
            vllm_sleep_mode = UNSET
        else:
            vllm_sleep_mode = self.vllm_sleep_mode

        vllm_weight_sync: str | Unset = UNSET
        if not isinstance(self.vllm_weight_sync, Unset):
            vllm_weight_sync = self.vllm_weight_sync

        warmup_ratio = self.warmup_ratio

        weight_decay = self.weight_decay

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if advantage_estimator is not UNSET:
            field_dict["advantage_estimator"] = advantage_estimator
        if batch_size is not UNSET:
            field_dict["batch_size"] = batch_size
        if beta is not UNSET:
            field_dict["beta"] = beta
        if capture_update is not UNSET:
            field_dict["capture_update"] = capture_update
        if chat_template_kwargs is not UNSET:
            field_dict["chat_template_kwargs"] = chat_template_kwargs
        if checkpoint_interval is not UNSET:
            field_dict["checkpoint_interval"] = checkpoint_interval
        if compile_update is not UNSET:
            field_dict["compile_update"] = compile_update
        if compute_multiplier is not UNSET:
            field_dict["compute_multiplier"] = compute_multiplier
        if delta is not UNSET:
            field_dict["delta"] = delta
        if device is not UNSET:
            field_dict["device"] = device
        if dynamic_sampling is not UNSET:
            field_dict["dynamic_sampling"] = dynamic_sampling
        if dynamic_sampling_max_rounds is not UNSET:
            field_dict["dynamic_sampling_max_rounds"] = dynamic_sampling_max_rounds
        if entropy_coef is not UNSET:
            field_dict["entropy_coef"] = entropy_coef
        if epsilon is not UNSET:
            field_dict["epsilon"] = epsilon
        if epsilon_high is not UNSET:
            field_dict["epsilon_high"] = epsilon_high
        if eval_interval is not UNSET:
            field_dict["eval_interval"] = eval_interval
        if eval_samples is not UNSET:
            field_dict["eval_samples"] = eval_samples
        if eval_temperature is not UNSET:
            field_dict["eval_temperature"] = eval_temperature
        if fused_lm_head is not UNSET:
            field_dict["fused_lm_head"] = fused_lm_head
        if gfpo_metric is not UNSET:
            field_dict["gfpo_metric"] = gfpo_metric
        if gfpo_sample_size is not UNSET:
            field_dict["gfpo_sample_size"] = gfpo_sample_size
        if gradient_checkpointing is not UNSET:
            field_dict["gradient_checkpointing"] = gradient_checkpointing
        if group_size is not UNSET:
            field_dict["group_size"] = group_size
        if health is not UNSET:
            field_dict["health"] = health
        if importance_sampling_level is not UNSET:
            field_dict["importance_sampling_level"] = importance_sampling_level
        if kl_estimator is not UNSET:
            field_dict["kl_estimator"] = kl_estimator
        if kl_importance_weighted is not UNSET:
            field_dict["kl_importance_weighted"] = kl_importance_weighted
        if learning_rate is not UNSET:
            field_dict["learning_rate"] = learning_rate
        if learning_rate_multiplier is not UNSET:
            field_dict["learning_rate_multiplier"] = learning_rate_multiplier
        if lora is not UNSET:
            field_dict["lora"] = lora
        if loss_aggregation is not UNSET:
            field_dict["loss_aggregation"] = loss_aggregation
        if lr_scheduler is not UNSET:
            field_dict["lr_scheduler"] = lr_scheduler
        if mask_truncated_completions is not UNSET:
            field_dict["mask_truncated_completions"] = mask_truncated_completions
        if max_completion_tokens is not UNSET:
            field_dict["max_completion_tokens"] = max_completion_tokens
        if max_grad_norm is not UNSET:
            field_dict["max_grad_norm"] = max_grad_norm
        if max_grader_error_rate is not UNSET:
            field_dict["max_grader_error_rate"] = max_grader_error_rate
        if max_prompt_tokens is not UNSET:
            field_dict["max_prompt_tokens"] = max_prompt_tokens
        if max_staleness is not UNSET:
            field_dict["max_staleness"] = max_staleness
        if max_steps is not UNSET:
            field_dict["max_steps"] = max_steps
        if max_tokens_per_micro_batch is not UNSET:
            field_dict["max_tokens_per_micro_batch"] = max_tokens_per_micro_batch
        if micro_batch_size is not UNSET:
            field_dict["micro_batch_size"] = micro_batch_size
        if n_epochs is not UNSET:
            field_dict["n_epochs"] = n_epochs
        if num_iterations is not UNSET:
            field_dict["num_iterations"] = num_iterations
        if off_policy_correction is not UNSET:
            field_dict["off_policy_correction"] = off_policy_correction
        if off_policy_level is not UNSET:
            field_dict["off_policy_level"] = off_policy_level
        if overlong_buffer_fraction is not UNSET:
            field_dict["overlong_buffer_fraction"] = overlong_buffer_fraction
        if overlong_penalty is not UNSET:
            field_dict["overlong_penalty"] = overlong_penalty
        if packing is not UNSET:
            field_dict["packing"] = packing
        if pool_exact is not UNSET:
            field_dict["pool_exact"] = pool_exact
        if precision is not UNSET:
            field_dict["precision"] = precision
        if preflight is not UNSET:
            field_dict["preflight"] = preflight
        if reasoning_effort is not UNSET:
            field_dict["reasoning_effort"] = reasoning_effort
        if recipe is not UNSET:
            field_dict["recipe"] = recipe
        if reward_aggregation is not UNSET:
            field_dict["reward_aggregation"] = reward_aggregation
        if reward_weights is not UNSET:
            field_dict["reward_weights"] = reward_weights
        if rollout_engine is not UNSET:
            field_dict["rollout_engine"] = rollout_engine
        if sample_log_count is not UNSET:
            field_dict["sample_log_count"] = sample_log_count
        if sampler_cuda_graphs is not UNSET:
            field_dict["sampler_cuda_graphs"] = sampler_cuda_graphs
        if scale_rewards is not UNSET:
            field_dict["scale_rewards"] = scale_rewards
        if sharding is not UNSET:
            field_dict["sharding"] = sharding
        if temperature is not UNSET:
            field_dict["temperature"] = temperature
        if tis_cap is not UNSET:
            field_dict["tis_cap"] = tis_cap
        if top_entropy_quantile is not UNSET:
            field_dict["top_entropy_quantile"] = top_entropy_quantile
        if top_p is not UNSET:
            field_dict["top_p"] = top_p
        if vllm_gpu_memory_utilization is not UNSET:
            field_dict["vllm_gpu_memory_utilization"] = vllm_gpu_memory_utilization
        if vllm_sleep_mode is not UNSET:
            field_dict["vllm_sleep_mode"] = vllm_sleep_mode
        if vllm_weight_sync is not UNSET:
            field_dict["vllm_weight_sync"] = vllm_weight_sync
        if warmup_ratio is not UNSET:
            field_dict["warmup_ratio"] = warmup_ratio
        if weight_decay is not UNSET:
            field_dict["weight_decay"] = weight_decay

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.grpo_config_chat_template_kwargs import GRPOConfigChatTemplateKwargs  # noqa: PLC0415
        from ..models.health_config import HealthConfig  # noqa: PLC0415
        from ..models.lora_config import LoraConfig  # noqa: PLC0415
        from ..models.preflight_config import PreflightConfig  # noqa: PLC0415

        d = dict(src_dict)
        _advantage_estimator = d.pop("advantage_estimator", UNSET)
        advantage_estimator: GRPOConfigAdvantageEstimator | Unset
        if isinstance(_advantage_estimator, Unset):
            advantage_estimator = UNSET
        else:
            advantage_estimator = check_grpo_config_advantage_estimator(_advantage_estimator)

        batch_size = d.pop("batch_size", UNSET)

        beta = d.pop("beta", UNSET)

        def _parse_capture_update(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        capture_update = _parse_capture_update(d.pop("capture_update", UNSET))

        _chat_template_kwargs = d.pop("chat_template_kwargs", UNSET)
        chat_template_kwargs: GRPOConfigChatTemplateKwargs | Unset
        if isinstance(_chat_template_kwargs, Unset):
            chat_template_kwargs = UNSET
        else:
            chat_template_kwargs = GRPOConfigChatTemplateKwargs.from_dict(_chat_template_kwargs)

        checkpoint_interval = d.pop("checkpoint_interval", UNSET)

        compile_update = d.pop("compile_update", UNSET)

        compute_multiplier = d.pop("compute_multiplier", UNSET)

        def _parse_delta(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        delta = _parse_delta(d.pop("delta", UNSET))

        device = d.pop("device", UNSET)

        dynamic_sampling = d.pop("dynamic_sampling", UNSET)

        dynamic_sampling_max_rounds = d.pop("dynamic_sampling_max_rounds", UNSET)

        entropy_coef = d.pop("entropy_coef", UNSET)

        epsilon = d.pop("epsilon", UNSET)

        def _parse_epsilon_high(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        epsilon_high = _parse_epsilon_high(d.pop("epsilon_high", UNSET))

        eval_interval = d.pop("eval_interval", UNSET)

        eval_samples = d.pop("eval_samples", UNSET)

        eval_temperature = d.pop("eval_temperature", UNSET)

        fused_lm_head = d.pop("fused_lm_head", UNSET)

        _gfpo_metric = d.pop("gfpo_metric", UNSET)
        gfpo_metric: GRPOConfigGfpoMetric | Unset
        if isinstance(_gfpo_metric, Unset):
            gfpo_metric = UNSET
        else:
            gfpo_metric = check_grpo_config_gfpo_metric(_gfpo_metric)

        def _parse_gfpo_sample_size(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        gfpo_sample_size = _parse_gfpo_sample_size(d.pop("gfpo_sample_size", UNSET))

        def _parse_gradient_checkpointing(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        gradient_checkpointing = _parse_gradient_checkpointing(d.pop("gradient_checkpointing", UNSET))

        group_size = d.pop("group_size", UNSET)

        _health = d.pop("health", UNSET)
        health: HealthConfig | Unset
        if isinstance(_health, Unset):
            health = UNSET
        else:
            health = HealthConfig.from_dict(_health)

        _importance_sampling_level = d.pop("importance_sampling_level", UNSET)
        importance_sampling_level: GRPOConfigImportanceSamplingLevel | Unset
        if isinstance(_importance_sampling_level, Unset):
            importance_sampling_level = UNSET
        else:
            importance_sampling_level = check_grpo_config_importance_sampling_level(_importance_sampling_level)

        _kl_estimator = d.pop("kl_estimator", UNSET)
        kl_estimator: GRPOConfigKlEstimator | Unset
        if isinstance(_kl_estimator, Unset):
            kl_estimator = UNSET
        else:
            kl_estimator = check_grpo_config_kl_estimator(_kl_estimator)

        kl_importance_weighted = d.pop("kl_importance_weighted", UNSET)

        learning_rate = d.pop("learning_rate", UNSET)

        learning_rate_multiplier = d.pop("learning_rate_multiplier", UNSET)

        _lora = d.pop("lora", UNSET)
        lora: LoraConfig | Unset
        if isinstance(_lora, Unset):
            lora = UNSET
        else:
            lora = LoraConfig.from_dict(_lora)

        _loss_aggregation = d.pop("loss_aggregation", UNSET)
        loss_aggregation: GRPOConfigLossAggregation | Unset
        if isinstance(_loss_aggregation, Unset):
            loss_aggregation = UNSET
        else:
            loss_aggregation = check_grpo_config_loss_aggregation(_loss_aggregation)

        _lr_scheduler = d.pop("lr_scheduler", UNSET)
        lr_scheduler: GRPOConfigLrScheduler | Unset
        if isinstance(_lr_scheduler, Unset):
            lr_scheduler = UNSET
        else:
            lr_scheduler = check_grpo_config_lr_scheduler(_lr_scheduler)

        mask_truncated_completions = d.pop("mask_truncated_completions", UNSET)

        max_completion_tokens = d.pop("max_completion_tokens", UNSET)

        max_grad_norm = d.pop("max_grad_norm", UNSET)

        max_grader_error_rate = d.pop("max_grader_error_rate", UNSET)

        max_prompt_tokens = d.pop("max_prompt_tokens", UNSET)

        max_staleness = d.pop("max_staleness", UNSET)

        def _parse_max_steps(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_steps = _parse_max_steps(d.pop("max_steps", UNSET))

        def _parse_max_tokens_per_micro_batch(data: object) -> GRPOConfigMaxTokensPerMicroBatchType0 | int | Unset:
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                max_tokens_per_micro_batch_type_0 = check_grpo_config_max_tokens_per_micro_batch_type_0(data)

                return max_tokens_per_micro_batch_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(GRPOConfigMaxTokensPerMicroBatchType0 | int | Unset, data)

        max_tokens_per_micro_batch = _parse_max_tokens_per_micro_batch(d.pop("max_tokens_per_micro_batch", UNSET))

        def _parse_micro_batch_size(data: object) -> GRPOConfigMicroBatchSizeType0 | int | Unset:
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                micro_batch_size_type_0 = check_grpo_config_micro_batch_size_type_0(data)

                return micro_batch_size_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(GRPOConfigMicroBatchSizeType0 | int | Unset, data)

        micro_batch_size = _parse_micro_batch_size(d.pop("micro_batch_size", UNSET))

        n_epochs = d.pop("n_epochs", UNSET)

        num_iterations = d.pop("num_iterations", UNSET)

        _off_policy_correction = d.pop("off_policy_correction", UNSET)
        off_policy_correction: GRPOConfigOffPolicyCorrection | Unset
        if isinstance(_off_policy_correction, Unset):
            off_policy_correction = UNSET
        else:
            off_policy_correction = check_grpo_config_off_policy_correction(_off_policy_correction)

        _off_policy_level = d.pop("off_policy_level", UNSET)
        off_policy_level: GRPOConfigOffPolicyLevel | Unset
        if isinstance(_off_policy_level, Unset):
            off_policy_level = UNSET
        else:
            off_policy_level = check_grpo_config_off_policy_level(_off_policy_level)

        def _parse_overlong_buffer_fraction(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        overlong_buffer_fraction = _parse_overlong_buffer_fraction(d.pop("overlong_buffer_fraction", UNSET))

        overlong_penalty = d.pop("overlong_penalty", UNSET)

        packing = d.pop("packing", UNSET)

        pool_exact = d.pop("pool_exact", UNSET)

        _precision = d.pop("precision", UNSET)
        precision: GRPOConfigPrecision | Unset
        if isinstance(_precision, Unset):
            precision = UNSET
        else:
            precision = check_grpo_config_precision(_precision)

        def _parse_preflight(data: object) -> None | PreflightConfig | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                preflight_type_0 = PreflightConfig.from_dict(data)

                return preflight_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PreflightConfig | Unset, data)

        preflight = _parse_preflight(d.pop("preflight", UNSET))

        _reasoning_effort = d.pop("reasoning_effort", UNSET)
        reasoning_effort: GRPOConfigReasoningEffort | Unset
        if isinstance(_reasoning_effort, Unset):
            reasoning_effort = UNSET
        else:
            reasoning_effort = check_grpo_config_reasoning_effort(_reasoning_effort)

        def _parse_recipe(data: object) -> GRPOConfigRecipeType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                recipe_type_0 = check_grpo_config_recipe_type_0(data)

                return recipe_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(GRPOConfigRecipeType0 | None | Unset, data)

        recipe = _parse_recipe(d.pop("recipe", UNSET))

        _reward_aggregation = d.pop("reward_aggregation", UNSET)
        reward_aggregation: GRPOConfigRewardAggregation | Unset
        if isinstance(_reward_aggregation, Unset):
            reward_aggregation = UNSET
        else:
            reward_aggregation = check_grpo_config_reward_aggregation(_reward_aggregation)

        def _parse_reward_weights(data: object) -> list[float] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                reward_weights_type_0 = cast(list[float], data)

                return reward_weights_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        reward_weights = _parse_reward_weights(d.pop("reward_weights", UNSET))

        _rollout_engine = d.pop("rollout_engine", UNSET)
        rollout_engine: GRPOConfigRolloutEngine | Unset
        if isinstance(_rollout_engine, Unset):
            rollout_engine = UNSET
        else:
            rollout_engine = check_grpo_config_rollout_engine(_rollout_engine)

        sample_log_count = d.pop("sample_log_count", UNSET)

        sampler_cuda_graphs = d.pop("sampler_cuda_graphs", UNSET)

        _scale_rewards = d.pop("scale_rewards", UNSET)
        scale_rewards: GRPOConfigScaleRewards | Unset
        if isinstance(_scale_rewards, Unset):
            scale_rewards = UNSET
        else:
            scale_rewards = check_grpo_config_scale_rewards(_scale_rewards)

        _sharding = d.pop("sharding", UNSET)
        sharding: GRPOConfigSharding | Unset
        if isinstance(_sharding, Unset):
            sharding = UNSET
        else:
            sharding = check_grpo_config_sharding(_sharding)

        temperature = d.pop("temperature", UNSET)

        def _parse_tis_cap(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        tis_cap = _parse_tis_cap(d.pop("tis_cap", UNSET))

        top_entropy_quantile = d.pop("top_entropy_quantile", UNSET)

        top_p = d.pop("top_p", UNSET)

        def _parse_vllm_gpu_memory_utilization(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        vllm_gpu_memory_utilization = _parse_vllm_gpu_memory_utilization(d.pop("vllm_gpu_memory_utilization", UNSET))

        def _parse_vllm_sleep_mode(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        vllm_sleep_mode = _parse_vllm_sleep_mode(d.pop("vllm_sleep_mode", UNSET))

        _vllm_weight_sync = d.pop("vllm_weight_sync", UNSET)
        vllm_weight_sync: GRPOConfigVllmWeightSync | Unset
        if isinstance(_vllm_weight_sync, Unset):
            vllm_weight_sync = UNSET
        else:
            vllm_weight_sync = check_grpo_config_vllm_weight_sync(_vllm_weight_sync)

        warmup_ratio = d.pop("warmup_ratio", UNSET)

        weight_decay = d.pop("weight_decay", UNSET)

        grpo_config = cls(
            advantage_estimator=advantage_estimator,
            batch_size=batch_size,
            beta=beta,
            capture_update=capture_update,
            chat_template_kwargs=chat_template_kwargs,
            checkpoint_interval=checkpoint_interval,
            compile_update=compile_update,
            compute_multiplier=compute_multiplier,
            delta=delta,
            device=device,
            dynamic_sampling=dynamic_sampling,
            dynamic_sampling_max_rounds=dynamic_sampling_max_rounds,
            entropy_coef=entropy_coef,
            epsilon=epsilon,
            epsilon_high=epsilon_high,
            eval_interval=eval_interval,
            eval_samples=eval_samples,
            eval_temperature=eval_temperature,
            fused_lm_head=fused_lm_head,
            gfpo_metric=gfpo_metric,
            gfpo_sample_size=gfpo_sample_size,
            gradient_checkpointing=gradient_checkpointing,
            group_size=group_size,
            health=health,
            importance_sampling_level=importance_sampling_level,
            kl_estimator=kl_estimator,
            kl_importance_weighted=kl_importance_weighted,
            learning_rate=learning_rate,
            learning_rate_multiplier=learning_rate_multiplier,
            lora=lora,
            loss_aggregation=loss_aggregation,
            lr_scheduler=lr_scheduler,
            mask_truncated_completions=mask_truncated_completions,
            max_completion_tokens=max_completion_tokens,
            max_grad_norm=max_grad_norm,
            max_grader_error_rate=max_grader_error_rate,
            max_prompt_tokens=max_prompt_tokens,
            max_staleness=max_staleness,
            max_steps=max_steps,
            max_tokens_per_micro_batch=max_tokens_per_micro_batch,
            micro_batch_size=micro_batch_size,
            n_epochs=n_epochs,
            num_iterations=num_iterations,
            off_policy_correction=off_policy_correction,
            off_policy_level=off_policy_level,
            overlong_buffer_fraction=overlong_buffer_fraction,
            overlong_penalty=overlong_penalty,
            packing=packing,
            pool_exact=pool_exact,
            precision=precision,
            preflight=preflight,
            reasoning_effort=reasoning_effort,
            recipe=recipe,
            reward_aggregation=reward_aggregation,
            reward_weights=reward_weights,
            rollout_engine=rollout_engine,
            sample_log_count=sample_log_count,
            sampler_cuda_graphs=sampler_cuda_graphs,
            scale_rewards=scale_rewards,
            sharding=sharding,
            temperature=temperature,
            tis_cap=tis_cap,
            top_entropy_quantile=top_entropy_quantile,
            top_p=top_p,
            vllm_gpu_memory_utilization=vllm_gpu_memory_utilization,
            vllm_sleep_mode=vllm_sleep_mode,
            vllm_weight_sync=vllm_weight_sync,
            warmup_ratio=warmup_ratio,
            weight_decay=weight_decay,
        )

        return grpo_config
