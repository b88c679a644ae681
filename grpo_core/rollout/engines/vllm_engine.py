"""vLLM as the rollout engine: the base weights live in a vLLM engine, ``sync`` hands it the current policy.

Supported releases: vLLM 0.26 to 0.32 (tested: 0.26.0's CUDA build and 0.32.0's CPU build, one code path;
grpo_core.hardware.vllm_support refuses others when the engine starts).

Two sync paths (``sync=`` option), both checked against the trainer's log-probs on vLLM's CPU build
(tests/vllm) and on CUDA (tests/gpu); the default ``"auto"`` takes ``"merged"`` on vLLM's CPU platform and for
fp32 weights on a GPU (vLLM's LoRA kernels take fp16/bf16 only), and ``"lora"`` elsewhere:

- ``"lora"`` — **LoRA hot swap**. vLLM's CPU build supports LoRA (``PunicaWrapperCPU``): ``sync`` saves the PEFT
  adapter to ``<tmp>/step-N`` and the next ``generate`` passes ``LoRARequest("step-N", N + 1, path)``. Every step
  gets a new integer id — vLLM caches adapters by id and would otherwise keep sampling the stale weights — and
  the previous id is removed from the engine (and its folder deleted), so memory does not grow with the step
  count. Works for any ``target_modules`` vLLM supports, including the default ``"all-linear"``. Why not on CPU:
  there the LoRA kernels are the reference torch ops (a per-token gather of every A/B matrix); SmolLM2-135M with
  r=16 all-linear sampled 4×8×24 tokens in ~33 s this way against ~4 s merged (fp32, 2 cores).
- ``"merged"`` — **merged weights**. The engine starts without LoRA; ``sync`` writes the base model's state dict
  with W + ΔW for every LoRA layer to one safetensors file, the vLLM worker reloads it in place (``_WeightSync``,
  a worker extension calling vLLM's ``reload_weights``), and the prefix cache is reset (its KV blocks were
  computed with the old weights). Base-model speed; costs a write + read of the whole model per step (~2 s for
  SmolLM2-135M in fp32).

Sleep mode (on a GPU, ``sleep=``): the engine shares the GPU with the trainer, and sampling and the update take
turns. ``suspend`` (called by the trainer before each update) puts vLLM to sleep: its KV cache is freed and its
weights are copied to host memory (level 1, LoRA sync) or dropped (level 2, merged sync, which reloads every
weight anyway), so the update gets the memory the engine held; the next ``sync`` or ``generate`` wakes it (torch's
cached blocks are handed back to the driver first, or vLLM could not map its memory again). vLLM maps the
memory back at the same addresses, so its captured CUDA graphs stay valid, and its prefix cache is reset by the
sleep. vLLM's CPU platform has no sleep mode.

Log-probs: vLLM runs with ``logprobs_mode="processed_logprobs"``, i.e. the log-softmax of the logits *after*
temperature scaling (and after top-k/top-p filtering), which is what the trainer's
``grpo_core.update.logprobs.completion_logprobs(..., temperature=T)`` computes when ``top_p == 1``. With ``top_p < 1``
vLLM reports the log-prob under the renormalised nucleus — the distribution that really drew the token — which
is higher than the trainer's full-vocabulary value by −log(nucleus mass); the truncated importance weight then
corrects for the nucleus as well as for the kernel mismatch.

Tokens: prompts are tokenised with *our* tokenizer (``add_special_tokens=False``) and sent as token ids, so
the trainer scores exactly the ids vLLM conditioned on. Generation stops on every EOS id (generation config +
tokenizer) and vLLM keeps the stop token in ``token_ids``, so a completion's mask includes its EOS.

Process model: vLLM's default multiprocessing engine (a spawned EngineCore + worker process). The training
process's torch threads and CPU affinity stay untouched (vLLM in-process would pin them and replace
``torch.set_num_threads``). Consequence of ``spawn``: a script that creates this engine needs an
``if __name__ == "__main__":`` guard (pytest, Celery workers and ``python -m`` entry points are fine).
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from grpo_core.hardware.vllm_support import require_supported_vllm
from grpo_core.rollout.batch import Rollout, eos_ids, pack_rollout
from grpo_core.rollout.engines.base import Sampling
from grpo_core.schemas.config import WeightSync

# Ranks vLLM accepts for ``max_lora_rank`` (vllm.config.lora.MaxLoRARanks).
_VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def _cpu_env_defaults() -> None:
    """Give vLLM's CPU worker every core this process may use, unless the caller already chose.

    vLLM's "auto" binding reserves a core for its scheduler process, which mostly waits on the worker; on a 2-core
    machine that leaves one core idle during a rollout. Must run before the engine starts (the worker reads it).
    """
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", ",".join(map(str, cores)))
    os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")


# What torchrun tells a rank; a vLLM engine started by a rank must not read it as its own world (it is one process).
_LAUNCHER_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")


@contextlib.contextmanager
def _engine_env(device: str | None, fp32: bool = False) -> Iterator[None]:
    """The environment vLLM's engine process is spawned with: a world of one, and on ``cuda:N`` only that GPU
    visible (vLLM places its engine on the first visible device; a rank of a multi-GPU job trains on
    ``cuda:LOCAL_RANK``, grpo_core.hardware.distributed). ``fp32``: Triton's fp32 dots in full precision (vLLM's
    fp32 attention on a GPU is a Triton kernel, whose dots default to TF32: log-probs 1e-3 from the trainer's
    instead of float rounding). Restored after the engine started."""
    saved = {k: os.environ.get(k) for k in (*_LAUNCHER_ENV, "CUDA_VISIBLE_DEVICES", "TRITON_F32_DEFAULT")}
    try:
        for k in _LAUNCHER_ENV:
            os.environ.pop(k, None)
        if fp32:
            os.environ.setdefault("TRITON_F32_DEFAULT", "ieee")
        if device is not None and device.startswith("cuda:"):
            index = int(device.split(":", 1)[1])
            visible = saved["CUDA_VISIBLE_DEVICES"]
            ids = visible.split(",") if visible else [str(i) for i in range(index + 1)]
            os.environ["CUDA_VISIBLE_DEVICES"] = ids[index]
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class _WeightSync:
    """Mixed into vLLM's worker process (``worker_extension_cls``): reload the model's weights from a file.

    ``reload_weights`` is vLLM's in-place reload: it re-materialises each layer, loads the checkpoint-format
    tensors and re-runs the layer's post-load processing. A plain ``model.load_weights`` fails on CPU because
    the linear layers' weights were repacked for oneDNN and replaced by empty tensors after the first load.
    """

    def grpo_reload_weights(self, path: str) -> None:
        from safetensors import safe_open

        with safe_open(path, "pt") as f:  # a safe_open handle is not iterable: .keys() is needed
            weights = ((k, f.get_tensor(k)) for k in f.keys())  # noqa: SIM118
            self.reload_weights(weights_iterator=weights)  # type: ignore[attr-defined]


def merged_state_dict(model: Any) -> dict[str, Any]:
    """The base model's full state dict (HF names) with every LoRA layer merged: W + ΔW of the active adapters.

    Full, not only the adapted layers: vLLM's reload restores layers that receive no weights but warns for each.
    ΔW is PEFT's own ``get_delta_weight`` (scaling, rsLoRA, fan-in/fan-out handled by PEFT).
    """
    import torch
    from peft.tuners.lora import LoraLayer

    out: dict[str, Any] = {}
    with torch.no_grad():
        deltas: dict[str, Any] = {}
        for name, module in model.named_modules():
            if isinstance(module, LoraLayer):
                key = name.removeprefix("base_model.model.") + ".weight"
                for adapter in module.active_adapters:
                    if adapter in module.lora_A or adapter in module.lora_embedding_A:
                        lora: Any = module  # peft's LoraLayer subclasses define get_delta_weight; the base does not
                        deltas[key] = deltas.get(key, 0) + lora.get_delta_weight(adapter)
        seen: set[int] = set()
        for name, tensor in model.get_base_model().state_dict().items():
            if ".lora_" in name or tensor.data_ptr() in seen:  # adapter tensors; a tied copy (lm_head)
                continue
            seen.add(tensor.data_ptr())
            name = name.replace(".base_layer.", ".")
            out[name] = (tensor + deltas[name] if name in deltas else tensor).contiguous()
    return out


def resolve_sync(sync: WeightSync, dtype: str, *, cpu: bool) -> WeightSync:
    """The weight sync ``"auto"`` stands for, and a refusal of LoRA sync where vLLM cannot run it: on vLLM's CPU
    build merged weights (its LoRA kernels are reference torch ops, slow); on a GPU LoRA hot swap, except for fp32
    weights, which vLLM's LoRA kernels do not take (fp16/bf16 only): merged weights then."""
    fp32 = dtype in ("float32", "fp32")
    if sync == "auto":
        return "merged" if cpu or fp32 else "lora"
    if sync == "lora" and fp32 and not cpu:
        raise ValueError(
            "vLLM's LoRA kernels on a GPU take fp16/bf16 weights, and this engine runs in float32: use "
            "vllm_weight_sync 'merged' (or 'auto'), or precision 'bf16'"
        )
    return sync


class VLLMEngine:
    """Samples G completions per prompt with vLLM; ``sync`` swaps in the trainer's current LoRA adapter."""

    name = "vllm"

    def __init__(
        self,
        model_dir: Path,
        tokenizer: Any,
        *,
        dtype: str = "float32",
        max_model_len: int | None = None,
        max_lora_rank: int = 16,
        seed: int = 0,
        sync: WeightSync = "auto",
        kv_cache_gib: float = 1.0,
        gpu_memory_utilization: float | None = None,
        enforce_eager: bool | None = None,
        llm_kwargs: dict[str, Any] | None = None,
        device: str | None = None,
        sleep: bool | None = None,
    ) -> None:
        """Start a vLLM engine on the base model in ``model_dir`` (a plain HF folder, read offline).

        ``sync``: ``"auto"``, ``"lora"`` or ``"merged"`` (module doc). ``kv_cache_gib`` sizes the KV cache
        explicitly (on CPU, vLLM would otherwise reserve a fraction of all RAM). ``gpu_memory_utilization``: on a
        GPU shared with training, the engine's share of the device (weights, activations and KV cache; the
        trainer computes it, grpo_core.hardware.memory); given, it replaces ``kv_cache_gib``. ``enforce_eager`` skips
        torch.compile and CUDA graphs; None = on vLLM's CPU build only, where compiling costs more on 2 cores than
        a short rollout gains (and the CPU build turns compilation off with LoRA anyway), off on a GPU.
        ``llm_kwargs`` go to ``vllm.LLM`` unchanged and win over these. ``device``: the trainer's device; on
        ``cuda:N`` the engine runs on that GPU (one engine per rank of a multi-GPU job). ``sleep``: use vLLM's sleep
        mode between rollouts (module doc); None = where the platform has it (CUDA), never on vLLM's CPU build.
        """
        if sync not in ("auto", "lora", "merged"):
            raise ValueError(f"sync must be 'auto', 'lora' or 'merged', not {sync!r}")
        require_supported_vllm()
        _cpu_env_defaults()  # before vLLM reads its environment; vLLM's GPU platforms ignore these variables
        from transformers import GenerationConfig
        from vllm import LLM
        from vllm.platforms import current_platform

        cpu = bool(current_platform.is_cpu())
        sync = resolve_sync(sync, dtype, cpu=cpu)
        if enforce_eager is None:
            enforce_eager = cpu
        can_sleep = bool(current_platform.is_sleep_mode_available())
        if sleep and not can_sleep:
            raise ValueError(f"vLLM has no sleep mode on the {current_platform.device_name} platform")
        self._asleep: set[str] = set()  # the memory tags (vLLM's) asleep now
        self._synced = False  # whether sync() has run (a merged sync rewrites every weight)

        self._tokenizer = tokenizer
        try:
            gen = GenerationConfig.from_pretrained(model_dir)
        except OSError:  # no generation_config.json: the tokenizer's EOS alone
            gen = None
        self._stop = eos_ids(SimpleNamespace(generation_config=gen), tokenizer)
        pad = tokenizer.pad_token_id
        self._pad_id = pad if pad is not None else self._stop[0]
        rank = next((r for r in _VLLM_LORA_RANKS if r >= max_lora_rank), None)
        if rank is None:
            raise ValueError(f"LoRA rank {max_lora_rank} is above vLLM's maximum {_VLLM_LORA_RANKS[-1]}")
        kwargs: dict[str, Any] = {
            "model": str(model_dir),
            "dtype": dtype,
            "seed": seed,
            "max_model_len": max_model_len,
            "enforce_eager": enforce_eager,
            "logprobs_mode": "processed_logprobs",  # after temperature: what the trainer computes (module doc)
            "generation_config": "vllm",  # sampling is fully specified here, not by the model's defaults
        }
        if gpu_memory_utilization is not None:
            kwargs["gpu_memory_utilization"] = gpu_memory_utilization
        else:
            kwargs["kv_cache_memory_bytes"] = int(kv_cache_gib * 2**30)
        if sync == "lora":  # one policy at a time; the CPU cache holds the current adapter and the one replaced
            kwargs |= {"enable_lora": True, "max_lora_rank": rank, "max_loras": 1, "max_cpu_loras": 2}
        else:
            kwargs["worker_extension_cls"] = f"{__name__}._WeightSync"
        kwargs["enable_sleep_mode"] = can_sleep if sleep is None else sleep
        kwargs.update(llm_kwargs or {})
        self._sleep = bool(kwargs["enable_sleep_mode"])
        self._sync_mode = sync
        with _engine_env(device, fp32=dtype in ("float32", "fp32")):
            self._llm: Any = LLM(**kwargs)
        self._dir = Path(tempfile.mkdtemp(prefix="vllm-sync-"))
        self._lora: Any = None  # the LoRARequest of the current policy; None = base weights

    def generate(self, prompts: list[str], sampling: Sampling) -> Rollout:
        """``group_size`` completions per prompt (row i belongs to prompt i // G) with their sampling log-probs.

        Prompt i gets seed ``seed + first_row + i·G`` (vLLM gives its j-th sample ``+ j``), so no two rows of a step
        share a random stream (with one seed for all prompts, sample j of every prompt would reuse the same noise),
        and a rank that samples a share of the step's prompts seeds each as one process would.
        """
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        self._wake()
        prompt_ids = [self._tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        g = sampling.group_size
        params = [
            SamplingParams(
                n=g,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                max_tokens=sampling.max_new_tokens,
                seed=sampling.seed + sampling.first_row + i * g,
                logprobs=0,  # only the sampled token's log-prob
                stop_token_ids=self._stop,
                detokenize=False,  # texts are decoded with our tokenizer below
            )
            for i in range(len(prompts))
        ]
        outputs = self._llm.generate(
            [TokensPrompt(prompt_token_ids=ids) for ids in prompt_ids],
            params,
            lora_request=self._lora,
            use_tqdm=False,
        )
        rows_prompt: list[list[int]] = []
        completions: list[list[int]] = []
        logps: list[list[float]] = []
        for ids, out in zip(prompt_ids, outputs, strict=True):
            for c in sorted(out.outputs, key=lambda c: c.index):
                tokens = list(c.token_ids)
                rows_prompt.append(ids)
                completions.append(tokens)
                logps.append([step[tok].logprob for step, tok in zip(c.logprobs, tokens, strict=True)])
        return pack_rollout(
            rows_prompt,
            completions,
            self._stop,
            self._pad_id,
            lambda ids: self._tokenizer.decode(ids, skip_special_tokens=True),
            sampling_logp=logps,
        )

    def continue_turns(
        self, sequences: list[list[int]], sampling: Sampling, rows: list[int]
    ) -> list[tuple[list[int], list[float] | None]]:
        """One continuation per token sequence, seeded by (the turn's seed, the trajectory's row)."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        self._wake()
        params = [
            SamplingParams(
                n=1,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                max_tokens=sampling.max_new_tokens,
                seed=sampling.seed + row,
                logprobs=0,
                stop_token_ids=self._stop,
                detokenize=False,
            )
            for row in rows
        ]
        outputs = self._llm.generate(
            [TokensPrompt(prompt_token_ids=ids) for ids in sequences], params, lora_request=self._lora, use_tqdm=False
        )
        out: list[tuple[list[int], list[float] | None]] = []
        for o in outputs:
            c = o.outputs[0]
            tokens = list(c.token_ids)
            out.append((tokens, [step[tok].logprob for step, tok in zip(c.logprobs, tokens, strict=True)]))
        return out

    def sync(self, model: Any, step: int) -> None:
        """Make the next ``generate`` sample from ``model``'s current LoRA weights (see module doc)."""
        if not hasattr(model, "peft_config"):
            raise TypeError("the vLLM engine syncs LoRA adapters: the policy must be a PEFT model")
        if self._sync_mode == "merged":
            from safetensors.torch import save_file

            path = self._dir / f"merged-step-{step}.safetensors"
            save_file(merged_state_dict(model), str(path))
            self._wake(["weights"])  # the weights' memory first (level 2 dropped it): the reload fills it
            self._llm.collective_rpc("grpo_reload_weights", args=(str(path),))
            self._wake()
            self._llm.reset_prefix_cache()  # cached KV blocks were computed with the old weights
            path.unlink()
            self._synced = True
            return
        from vllm.lora.request import LoRARequest

        self._wake()
        path = self._dir / f"step-{step}"
        if path.exists():  # a re-sync of the same step (e.g. after a resume): never reuse stale files
            shutil.rmtree(path)
        model.save_pretrained(path)
        old = self._lora
        self._lora = LoRARequest(f"step-{step}", step + 1, str(path))
        if old is not None:  # evict the previous adapter (same id: so the next generate reloads it)
            self._llm.llm_engine.remove_lora(old.lora_int_id)
            if old.lora_path != self._lora.lora_path:
                shutil.rmtree(old.lora_path, ignore_errors=True)
        self._synced = True

    def suspend(self) -> None:
        """Hand the GPU memory sampling holds to the update: vLLM's sleep (module doc); nothing without sleep mode.
        Level 2 (weights dropped) with merged sync once a sync has run, as the next ``sync`` reloads every weight;
        level 1 (weights kept in host memory) with LoRA sync, whose base weights never change, and before the first
        merged sync (the base weights are not in any file of ours to reload from)."""
        if self._sleep and not self._asleep:
            self._llm.sleep(level=2 if self._sync_mode == "merged" and self._synced else 1)
            self._asleep = {"weights", "kv_cache"}

    def _wake(self, tags: list[str] | None = None) -> None:
        """Wake the sleeping engine: ``tags`` (vLLM's memory tags) only, or None for all that still sleep, after
        which it schedules again. The tags are always named: vLLM 0.26's ``wake_up(None)`` maps every pool again,
        also one a partial wake already mapped, and fails."""
        wake = sorted(self._asleep if tags is None else self._asleep & set(tags))
        if not wake:
            return
        import torch

        torch.cuda.empty_cache()  # the update's cached blocks back to the driver: vLLM maps its memory again
        self._llm.wake_up(tags=wake)
        self._asleep -= set(wake)

    def close(self) -> None:
        """Stop vLLM's engine processes and free its memory, so another engine can start in this process.

        vLLM's shutdown SIGTERMs the EngineCore process and force-kills it after a grace period (~5 s here) but
        does not reap it; ``active_children()`` joins it so no zombie is left per engine.
        """
        llm, self._llm = getattr(self, "_llm", None), None
        if llm is not None:
            llm.llm_engine.engine_core.shutdown()
            del llm
        gc.collect()
        multiprocessing.active_children()
        shutil.rmtree(getattr(self, "_dir", ""), ignore_errors=True)
