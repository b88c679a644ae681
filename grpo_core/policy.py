"""One policy session: load the policy and start its rollout engine, written once.

Three callers probe a policy, and all of them sample and score through grpo_core.rollout.scored.sample_and_score
(the same function a training step's batch is drawn with) on what ``open_policy`` opened:

- the trainer's validation (grpo_core.evaluation.validation), on the trainer's own model and engine;
- the readiness probe (grpo_core.evaluation.probe), before training on the base model and after on the trained
  adapter, with the job's engine and sampling settings;
- eval runs (grpo_core.evaluation.evals), on a base model or a fine-tuned model's PEFT adapter.

The trainer loads its policy and starts its engine with the same functions (``load_policy``,
``resolve_execution``, ``start_engine``), so a probe samples from exactly what training would have sampled from.

``open_policy`` frees what it opened on exit, also when the body raised: the engine (a vLLM engine's processes),
the environment's sandbox, and the device memory the model held (the process trains the next job).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from grpo_core.data.rows import prompt_text
from grpo_core.hardware.device import Placement, release_device_memory, resolve_device, vllm_on_cuda
from grpo_core.hardware.memory import (
    OWN_GPU_SHARE,
    VLLM_MAX_SHARE,
    checkpointing_needed,
    enable_checkpointing,
    vllm_memory_share,
)
from grpo_core.hardware.vllm_support import supported_vllm
from grpo_core.models.catalog import base_model_name
from grpo_core.rollout.agent.episodes import AgentRollouts, make_agent
from grpo_core.rollout.batch import eos_ids
from grpo_core.rollout.engines.base import RolloutEngine
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.environment import EnvironmentSpec
from grpo_core.update.captured import capture_by_default
from grpo_core.update.lora_fused import fuse_lora
from grpo_core.update.packing import head_problem


def _base_model(model_dir: Path, cfg: GRPOConfig) -> tuple[Any, Any]:
    """(the base model on ``cfg.device`` in eval mode, its tokenizer): fp32, or bf16 for ``precision="bf16"``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    # bf16: the frozen base weights are stored in bf16 (half the memory, and autocast need not cast them on every
    # call); peft keeps the adapter in fp32 (autocast_adapter_dtype), so the optimizer state and updates are fp32.
    dtype = torch.bfloat16 if cfg.precision == "bf16" else torch.float32
    base: Any = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype)
    base.to(resolve_device(cfg.device))  # peft creates the adapter on its base layer's device
    base.eval()
    return base, tokenizer


def load_policy(
    model_dir: Path, cfg: GRPOConfig, seed: int, *, fused_lora: bool = True, base_name: str | None = None
) -> tuple[Any, Any]:
    """Base model (fp32, or bf16 for ``precision="bf16"``; ``auto`` must be resolved before) on ``cfg.device``, with
    a fresh fp32 LoRA adapter (initialised from ``seed``; its B is zero, so the policy computes what the base model
    does) and its tokenizer. ``base_name``: what the adapter names as its base model (a registered model's hub id
    or id; default grpo_core.models.catalog.base_model_name). ``fused_lora``: the adapted layers run through
    grpo_core.update.lora_fused (the same math, one autograd node per layer)."""
    from peft import LoraConfig, get_peft_model

    base, tokenizer = _base_model(model_dir, cfg)
    torch.manual_seed(seed)
    lora = LoraConfig(
        r=cfg.lora.rank,
        lora_alpha=cfg.lora.alpha,  # type: ignore[arg-type]  # peft annotates int; it scales by alpha / r
        lora_dropout=cfg.lora.dropout,
        target_modules=cfg.lora.target_modules,
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(base, lora)
    model.peft_config["default"].base_model_name_or_path = base_name or base_model_name(model_dir)  # not a path
    model.eval()
    if fused_lora:
        fuse_lora(model)
    return model, tokenizer


def load_adapter(model_dir: Path, adapter_dir: Path, cfg: GRPOConfig) -> tuple[Any, Any]:
    """The base model with the PEFT adapter in ``adapter_dir`` (its own adapter_config.json says its rank, scaling
    and adapted modules: a training checkpoint, or a fine-tuned model's downloaded adapter), placed and typed as
    ``load_policy`` places the policy, the adapted layers fused; and the base model's tokenizer."""
    from peft import PeftModel

    base, tokenizer = _base_model(model_dir, cfg)
    # trainable, as load_policy's adapter: the same model the trainer would hold, so a probe of a checkpoint samples
    # what the trainer would have sampled
    model: Any = PeftModel.from_pretrained(base, str(adapter_dir), is_trainable=True)
    model.eval()
    fuse_lora(model)
    return model, tokenizer


def resolve_execution(
    cfg: GRPOConfig, model: Any, placement: Placement, own_gpu: bool = False, completion_tokens: int | None = None
) -> GRPOConfig:
    """``cfg`` with ``gradient_checkpointing``, ``capture_update``, ``rollout_engine`` and the vLLM engine's GPU share
    resolved for ``placement`` (``micro_batch_size`` waits for the engine: it is sized from the memory the engine
    leaves). ``own_gpu``: the engine samples on a GPU of its own (resources.rollout_devices), which it need not share.
    ``completion_tokens``: the longest sample after its prompt that memory is planned for (default
    ``max_completion_tokens``; a multi-turn episode's budget). Turns on ``model``'s activation checkpointing when
    it resolves to on: with ``gradient_checkpointing: auto``, where the update's micro-batch does not fit without
    it (grpo_core.hardware.memory.checkpointing_needed)."""
    engine = cfg.rollout_engine
    if engine == "auto":
        # fsdp samples with the merged engine (grpo_core.hardware.sharding); a vLLM release the service does not
        # run on is left alone (an explicit rollout_engine "vllm" is refused with the versions that work)
        # max_staleness > 0 hot-swaps LoRA adapters into vLLM, whose GPU kernels take no fp32 LoRA: merged there
        fp32_async = cfg.max_staleness > 0 and placement.precision == "fp32"
        use_vllm = placement.is_cuda and cfg.sharding != "fsdp" and not fp32_async
        use_vllm = use_vllm and vllm_on_cuda() and supported_vllm()
        engine = "vllm" if use_vllm else "merged"
    sleep = None
    if engine == "vllm" and placement.is_cuda:  # asleep during each update, unless it samples during it (staleness)
        sleep = not cfg.max_staleness if cfg.vllm_sleep_mode is None else cfg.vllm_sleep_mode
    checkpoint = cfg.gradient_checkpointing
    if checkpoint is None:  # an engine awake beside the update on the same GPU takes its share from it
        awake_share = VLLM_MAX_SHARE if sleep is False and not own_gpu else 0.0
        fused_head = cfg.fused_lm_head and head_problem(model) is None  # the head's logits bounded to a chunk
        checkpoint = checkpointing_needed(
            model, cfg, placement, engine_share=awake_share, fused_head=fused_head, completion_tokens=completion_tokens
        )
    if checkpoint:
        enable_checkpointing(model)
    capture = cfg.capture_update
    if capture is None:
        wakes = engine == "vllm" and bool(sleep) and not own_gpu
        capture = capture_by_default(model, placement.device, compile_update=cfg.compile_update, engine_wakes=wakes)
    share = None
    if engine == "vllm" and placement.is_cuda:
        if own_gpu:  # nothing of the training's on that GPU
            share = cfg.vllm_gpu_memory_utilization or OWN_GPU_SHARE
        else:
            share = vllm_memory_share(
                model,
                cfg,
                placement,
                checkpointing=checkpoint,
                sleeping=bool(sleep),
                completion_tokens=completion_tokens,
            )
    return cfg.model_copy(
        update={
            "gradient_checkpointing": checkpoint,
            "capture_update": capture,
            "rollout_engine": engine,
            "vllm_gpu_memory_utilization": share,
            "vllm_sleep_mode": sleep,
        }
    )


def make_engine(name: str, model: Any, tokenizer: Any, model_dir: Path, **options: Any) -> RolloutEngine:
    """The rollout engine called ``name`` (grpo_core.rollout.engines), with its own ``options``; vLLM is imported
    only when asked for (it is an optional extra)."""
    if name == "transformers":
        from grpo_core.rollout.engines.hf import TransformersEngine

        return TransformersEngine(model, tokenizer, **options)
    if name == "merged":
        from grpo_core.rollout.engines.merged import MergedEngine

        return MergedEngine(model, tokenizer, **options)
    if name == "vllm":
        from grpo_core.rollout.engines.vllm_engine import VLLMEngine

        return VLLMEngine(model_dir, tokenizer, **options)
    raise ValueError(f"unknown rollout engine {name!r}")


def start_engine(
    cfg: GRPOConfig,
    model: Any,
    tokenizer: Any,
    model_dir: Path,
    seed: int,
    autocast: torch.dtype | None,
    episode_tokens: int,
    rollout: tuple[int, int] | None = None,
) -> RolloutEngine:
    """The configured rollout engine, synced to ``model``; ``rollout_engine`` is resolved (never ``auto``,
    ``resolve_execution``). ``episode_tokens``: the most tokens a sample holds after its prompt (a multi-turn
    episode's budget). ``rollout``: (rows, positions) of one step's rollout on this process; the merged engine's
    static decode buffers are allocated for them now (before the trainer sizes its micro-batches from what is
    free), not at the first rollout."""
    if cfg.rollout_engine == "transformers":
        return make_engine("transformers", model, tokenizer, model_dir, autocast_dtype=autocast)
    if cfg.rollout_engine == "merged":
        mode = "auto" if cfg.sampler_cuda_graphs else "eager"
        precision = autocast or torch.float32
        return make_engine("merged", model, tokenizer, model_dir, dtype=precision, decode_mode=mode, reserve=rollout)
    dtype = "bfloat16" if cfg.precision == "bf16" else "float32"
    return make_engine(
        "vllm",
        model,
        tokenizer,
        model_dir,
        seed=seed,
        dtype=dtype,
        max_lora_rank=cfg.lora.rank,
        max_model_len=cfg.max_prompt_tokens + max(cfg.max_completion_tokens, episode_tokens),
        # max_staleness > 0: the adapter alone after each step (a LoRA hot swap), never a full copy of the weights
        sync="lora" if cfg.max_staleness and cfg.vllm_weight_sync == "auto" else cfg.vllm_weight_sync,
        gpu_memory_utilization=cfg.vllm_gpu_memory_utilization,
        device=cfg.device,  # resolved: cuda:LOCAL_RANK on a rank of a multi-GPU job
        sleep=cfg.vllm_sleep_mode,
    )


class PolicySession:
    """What ``open_policy`` opened: ``cfg`` (device, precision and engine resolved), ``placement``, ``model`` (the
    policy, a PEFT model), ``tokenizer``, ``engine`` (synced to the model) and ``agent`` (the job's environment in
    its sandbox; None without one). Closed when the ``with`` ends: its attributes are then gone, so a session the
    caller still holds keeps no memory alive."""

    def __init__(
        self,
        cfg: GRPOConfig,
        placement: Placement,
        model: Any,
        tokenizer: Any,
        engine: RolloutEngine,
        agent: AgentRollouts | None,
    ) -> None:
        self.cfg, self.placement, self.model, self.tokenizer = cfg, placement, model, tokenizer
        self.engine, self.agent = engine, agent

    def prompts(self, rows: list[dict[str, Any]]) -> list[str]:
        """The prompts training would feed for ``rows`` (``prompts_of`` with the job's template variables)."""
        return prompts_of(rows, self.tokenizer, self.cfg.chat_template_kwargs, self.agent)

    def close(self) -> None:
        """Stop the agent's sandbox and the engine and drop every reference to them and to the model (once: a
        closed session stays closed)."""
        if "engine" not in vars(self):
            return
        agent, engine = self.agent, self.engine
        del self.agent, self.engine, self.model, self.tokenizer
        try:
            if agent is not None:
                agent.runner.close()
        finally:
            engine.close()


@contextlib.contextmanager
def open_policy(
    cfg: GRPOConfig,
    model_dir: Path,
    *,
    placement: Placement,
    seed: int = 0,
    adapter_dir: Path | None = None,
    environment: EnvironmentSpec | None = None,
    sandbox_tier: str = "auto",
) -> Iterator[PolicySession]:
    """The policy of ``cfg`` on ``placement``, ready to sample: ``model_dir``'s base model with a fresh LoRA adapter
    (``load_policy``: its outputs are the base model's) or with the PEFT adapter in ``adapter_dir``
    (``load_adapter``: its rank and scaling are the adapter's own, ``cfg.lora`` follows them), the job's rollout
    engine (``resolve_execution``, ``start_engine``) synced to it, and, with an ``environment``, the agent that
    runs it in a ``sandbox_tier`` sandbox. On exit, also on error, the agent's sandbox and the engine are closed
    and the device memory handed back (grpo_core.hardware.device.release_device_memory)."""
    cfg = cfg.model_copy(update={"device": str(placement.device), "precision": placement.precision})
    session: PolicySession | None = None
    model: Any = None
    engine: RolloutEngine | None = None
    agent: AgentRollouts | None = None
    try:
        if adapter_dir is None:
            model, tokenizer = load_policy(model_dir, cfg, seed)
        else:
            model, tokenizer = load_adapter(model_dir, adapter_dir, cfg)
            lora = model.peft_config["default"]
            own = {"rank": lora.r, "alpha": float(lora.lora_alpha), "dropout": lora.lora_dropout}
            cfg = cfg.model_copy(update={"lora": cfg.lora.model_copy(update=own)})  # vLLM sizes its slot by it
        cfg = resolve_execution(cfg, model, placement)
        tokens = environment.max_total_tokens if environment is not None else cfg.max_completion_tokens
        engine = start_engine(cfg, model, tokenizer, model_dir, seed, placement.autocast, tokens)
        if adapter_dir is not None:
            engine.sync(model, 1)  # as after a training step: an engine with weights of its own (vLLM) gets the adapter
        if environment is not None:
            agent = make_agent(
                environment, tokenizer, eos_ids(model, tokenizer), cfg.chat_template_kwargs, sandbox_tier
            )
            agent.engine = engine
        session = PolicySession(cfg, placement, model, tokenizer, engine, agent)
        yield session
    finally:  # free whatever was opened, whatever failed: training (or the next job) needs the memory
        try:
            if session is not None:
                session.close()
            else:
                if agent is not None:
                    agent.runner.close()
                if engine is not None:
                    engine.close()
        finally:
            del session, model, engine, agent
            release_device_memory()


def prompts_of(
    rows: list[dict[str, Any]],
    tokenizer: Any,
    chat_template_kwargs: dict[str, Any] | None = None,
    agent: AgentRollouts | None = None,
) -> list[str]:
    """The exact text fed to the model for each row: an episode's first prompt (its tools shown) when the job has
    an environment, else grpo_core.data.rows.prompt_text with the job's template variables."""
    if agent is not None:
        return [agent.prompt(r) for r in rows]
    return [prompt_text(r, tokenizer, chat_template_kwargs) for r in rows]
