"""What one ``policy_update`` asks of the host: kernel-launching ops, all dispatches, host syncs and Python calls,
ours beside TRL's update on the same rollouts. Deterministic counts, on a CPU, in minutes.

    .venv/bin/python -m bench.update_counts [--models qwen2.5-0.5b,...] [--prompts 2] [--group-size 8]
                                            [--max-tokens 256] [--prompt-tokens 40] [--checkpointing] [--no-trl]
                                            [--head-dim 8]

Why counts: on a GPU an update this size is bound by the host when every dispatched op costs its 16–20 µs of
Python, autograd and launch (issue 44: ours and TRL's both, divided into their published GPU times), and a host
sync stalls the launch queue until the device catches up. Both are fixed by the code, not the card, so a CPU sees
them exactly: counts need no GPU, and a test holds a ceiling on them (tests/unit/test_update_counts.py), never a
time.

Shapes: the published configs of bench/real_models.py at reduced width (``narrow``): every count that the update
loops over stays as at full size (layers, heads, the 152k or 128k vocabulary the head is chunked over, the
rollout's segments and tokens), only the hidden width shrinks (head_dim 8), so a 4B or 8B shape counts in seconds.
The adapter is the service's default (LoRA r=16, α=32, all-linear, fused: grpo_core.update.lora_fused), β=0.04
(a reference pass), one micro-batch of every row (``--prompts`` × ``--group-size`` rows of ``--max-tokens``
tokens, each group sharing a prompt of ``--prompt-tokens``), bf16 autocast over bf16 weights, as on a GPU.

What is counted (``Counts``):
- *launches*: aten ops that would launch a kernel (not views, not allocations, not metadata);
- *dispatches*: every aten op the dispatcher hands to Python's mode (launching or not);
- *syncs*: every place the host waits for the device, with its source line. Ours is run a second time with the
  model on the ``meta`` device and the rollout on the host (``syncs_on_meta``): there the host and the device
  are told apart, so every read of a device value (``.item()``, ``.tolist()``, ``bool()``, a data-dependent shape
  such as ``nonzero``) and every blocking host-to-device copy is exactly what would sync on CUDA; a read is
  answered with zeros and the update goes on. TRL's cannot run so (its update reads values mid-step), so its
  column counts the ops that read a value on the host in the CPU run;
- *python calls*: Python function calls (``sys.setprofile``), the interpreter's share of the host time.

Ours is counted twice: eager, and *captured* (``capture_update``: each pack padded to its bucket, the reference
pass, the policy's forward and its backward each replayed as one CUDA graph, grpo_core.update.captured). A CPU has
no graphs, so ``Replays`` stands in for them: each pass is the one launch its graph is and hands back what a replay
does: what the host still launches, around the graphs, is then counted as exactly as the eager path's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import traceback
from collections import Counter as Tally
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

RESULTS = Path("bench/results")
DEFAULT_MODELS = ("qwen2.5-0.5b", "qwen2.5-1.5b", "qwen3-4b", "llama-3.1-8b")
# aten ops that never launch a kernel: allocation without initialisation, and metadata
NO_KERNEL = frozenset(
    {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "lift_fresh", "detach", "alias",
     "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_same_size", "_has_compatible_shallow_copy_type",
     "set_", "resize_", "_reshape_alias", "_unsafe_view", "as_strided"}
)  # fmt: skip
# ops that read a device value on the host (what ``.item()``, ``bool()``, ``.tolist()`` and data-dependent shapes
# dispatch to)
HOST_READS = ("_local_scalar_dense", "nonzero", "is_nonzero", "equal", "masked_select", "unique", "_unique2")


def launches(func: Any) -> bool:
    """Whether ``func`` (an aten OpOverload) runs a kernel: a view or one of ``NO_KERNEL`` does not."""
    if func.is_view:
        return False
    return func._schema.name.split("::")[-1] not in NO_KERNEL


def _caller() -> str:
    """The innermost frame of our code (grpo_core/, bench/ excluded) that led here: where a sync comes from."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        name = frame.filename.replace("\\", "/")
        if "/grpo_core/" in name:
            return f"{name[name.index('grpo_core/') :]}:{frame.lineno} {frame.name}"
    return "outside grpo_core"


@dataclass
class Counts:
    launches: int = 0
    dispatches: int = 0
    syncs: int = 0
    python_calls: int = 0
    sync_sites: dict[str, int] = field(default_factory=dict)
    top_ops: dict[str, int] = field(default_factory=dict)


class CountOps(TorchDispatchMode):
    """Counts every dispatch, the kernel-launching ones by name, and the host reads (``HOST_READS``) by site."""

    def __init__(self) -> None:
        super().__init__()
        self.counts = Counts()
        self.ops: Tally[str] = Tally()
        self.sites: Tally[str] = Tally()
        self.replaying = False  # inside a pass a graph replays (``Replays``): its ops are not the host's

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if self.replaying:
            return func(*args, **(kwargs or {}))
        self.counts.dispatches += 1
        name = func._schema.name.split("::")[-1]
        if launches(func):
            self.counts.launches += 1
            self.ops[name] += 1
        if name in HOST_READS:
            self.sites[_caller()] += 1
        return func(*args, **(kwargs or {}))


class SyncsOnMeta(TorchDispatchMode):
    """With the device's tensors on ``meta`` and the host's on the CPU: every op that would make the host wait for
    the device, by source line, answered with zeros so the update runs on (``syncs_on_meta``)."""

    def __init__(self) -> None:
        super().__init__()
        self.sites: Tally[str] = Tally()

    @staticmethod
    def _meta(args: Any) -> bool:
        return any(isinstance(a, torch.Tensor) and a.device.type == "meta" for a in args)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func._schema.name.split("::")[-1]
        flat = [*args, *kwargs.values()]
        if name == "_local_scalar_dense" and self._meta(args):
            self.sites[_caller()] += 1
            return 0 if not args[0].dtype.is_floating_point else 0.0
        if name in ("nonzero", "masked_select", "unique", "_unique2", "equal", "is_nonzero") and self._meta(flat):
            self.sites[_caller()] += 1
            raise RuntimeError(f"{name} of a device tensor has a data-dependent shape: {_caller()}")
        if name in ("_to_copy", "copy_") and self._to_host_or_blocking(name, args, kwargs):
            self.sites[_caller()] += 1
            if name == "_to_copy" and kwargs.get("device", args[0].device).type == "cpu":
                return torch.zeros(args[0].shape, dtype=kwargs.get("dtype") or args[0].dtype)
        return func(*args, **kwargs)

    @staticmethod
    def _to_host_or_blocking(name: str, args: Any, kwargs: dict[str, Any]) -> bool:
        """A copy from the device to the host, or a blocking copy from the host to the device (CUDA's copy
        waits for the stream unless ``non_blocking``)."""
        if name == "_to_copy":
            src, dst = args[0].device.type, (kwargs.get("device") or args[0].device).type
        else:
            src, dst = args[1].device.type, args[0].device.type
        if src == "meta" and dst == "cpu":
            return True
        return src == "cpu" and dst == "meta" and not kwargs.get("non_blocking", False)


def narrow(name: str, head_dim: int = 8) -> Any:
    """The transformers config of ``name`` (bench.real_models.SHAPES) with every loop count kept and the width cut:
    heads of ``head_dim``, the MLP in the published proportion."""
    from transformers import AutoConfig

    from bench.real_models import SHAPES

    c = {k: v for k, v in SHAPES[name].config.items() if k not in ("architectures", "torch_dtype")}
    width = c["hidden_size"] / (
        c["num_attention_heads"] * c.get("head_dim", c["hidden_size"] // c["num_attention_heads"])
    )
    hidden = round(width * c["num_attention_heads"] * head_dim)
    c["intermediate_size"] = 8 * round(c["intermediate_size"] / c["hidden_size"] * hidden / 8)
    c["hidden_size"] = hidden
    if "head_dim" in c:
        c["head_dim"] = head_dim
    config = AutoConfig.for_model(c.pop("model_type"), **c)
    config._attn_implementation = "sdpa"
    return config


def base_model(config: Any, device: str = "cpu") -> Any:
    """Random bf16 weights of ``config`` (the counts do not depend on them)."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    return model.eval()


def our_policy(config: Any, device: str = "cpu") -> Any:
    """Our policy as grpo_core.policy.load_policy makes it: the default adapter, fused."""
    from peft import LoraConfig, get_peft_model

    from grpo_core.update.lora_fused import fuse_lora

    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    model = get_peft_model(base_model(config, device), lora)
    model.eval()
    fuse_lora(model)
    with torch.no_grad():  # B = 0 would make every adapter's gradient of A zero; the counts are the same
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.01)
    return model


def rollout(vocab: int, a: argparse.Namespace) -> tuple[Any, torch.Tensor]:
    """``a.prompts`` groups of ``a.group_size`` rows, every completion ``a.max_tokens`` long (as the real-model bench's
    fixed-length generations), on the host; advantages of both signs."""
    from grpo_core.rollout.batch import Rollout

    g = torch.Generator().manual_seed(0)
    n = a.prompts * a.group_size
    prompts = torch.randint(3, vocab, (a.prompts, a.prompt_tokens), generator=g).repeat_interleave(a.group_size, 0)
    completions = torch.randint(3, vocab, (n, a.max_tokens), generator=g)
    ones = torch.ones
    ro = Rollout(prompts, ones(prompts.shape, dtype=torch.long), completions, ones(completions.shape, dtype=torch.long),
                 torch.zeros(n, dtype=torch.bool), [""] * n)  # fmt: skip
    return ro, torch.randn(n, generator=g)


def config_for(a: argparse.Namespace, **over: Any) -> Any:
    from grpo_core.schemas.config import GRPOConfig

    n = a.prompts * a.group_size
    tokens = a.prompts * (a.prompt_tokens + a.group_size * a.max_tokens)
    return GRPOConfig(
        batch_size=a.prompts, group_size=a.group_size, max_completion_tokens=a.max_tokens, beta=0.04,
        micro_batch_size=n, max_tokens_per_micro_batch=tokens, gradient_checkpointing=a.checkpointing,
        precision="bf16", **over,
    )  # fmt: skip


def _python_calls(fn: Any, replays: Replays | None = None) -> int:
    """Python calls of ``fn``, but those of the passes a graph replays (``replays``)."""
    calls = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "call" and not (replays is not None and replays.mode is not None and replays.mode.replaying):
            calls += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


def count(fn: Any, replays: Replays | None = None) -> Counts:
    """``fn`` run three times: once to warm up, once counted by ``CountOps``, once under the profiler.
    ``replays``: the graphs ``fn``'s passes replay from, told of the counting."""
    fn()
    mode = CountOps()
    if replays is not None:
        replays.mode = mode
    with mode:
        fn()
    out = mode.counts
    out.syncs = sum(mode.sites.values())
    out.sync_sites = dict(mode.sites.most_common())
    out.top_ops = dict(mode.ops.most_common(12))
    out.python_calls = _python_calls(fn, replays)
    return out


def ours(model: Any, ro: Any, adv: torch.Tensor, cfg: Any) -> Any:
    """One ``policy_update`` of ours, gradients cleared after (as the optimizer step would)."""
    from grpo_core.hardware.memory import checkpointing
    from grpo_core.update.step import policy_update

    def run() -> None:
        with checkpointing(model, bool(cfg.gradient_checkpointing)):
            policy_update(model, ro, adv, cfg, torch.bfloat16)
        model.zero_grad(set_to_none=True)

    return run


class Replays:
    """Stands in for grpo_core.update.captured.UpdateGraphs on a CPU, where there are no graphs: each pass a graph
    would replay counts as the one launch of its graph (two with gradients: the forward's and the backward's, as
    ``make_graphed_callables`` records them) and hands back what a replay does, its outputs (zeros of the bucket's
    shape) and, in the backward, a gradient for every trained parameter, without running the pass (what runs in
    it is the eager path's and does not reach the host; tests/unit/test_captured_update.py checks it). So ``count``
    sees exactly what the host still launches around the graphs."""

    def __init__(self) -> None:
        self.mode: CountOps | None = None
        self._params: list[torch.Tensor] = []

    def _launch(self) -> None:
        if self.mode is not None:
            self.mode.counts.launches += 1
            self.mode.counts.dispatches += 1

    @contextlib.contextmanager
    def _uncounted(self) -> Iterator[None]:
        """What a replay does without the host: not counted."""
        if self.mode is not None:
            self.mode.replaying = True
        try:
            yield
        finally:
            if self.mode is not None:
                self.mode.replaying = False

    def _static(self, packed: Any, entropy: bool) -> tuple[torch.Tensor, ...]:
        """A replay's outputs: the graph's static buffers, of the bucket's loss tokens."""
        with self._uncounted():
            n = packed.targets.shape[0]
            return tuple(torch.zeros(n, device=packed.targets.device) for _ in range(1 + entropy))

    def run(self, model: Any, run: Any, packed: Any, options: tuple[Any, ...]) -> Any:
        entropy = options[1] is not None
        self._launch()
        if not torch.is_grad_enabled():
            out = self._static(packed, entropy)
            return out[0], out[1] if entropy else None
        self._params = self._params or [p for p in model.parameters() if p.requires_grad]
        params, outer = self._params, self

        class Graphed(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, *inputs: Any) -> Any:
                return outer._static(packed, entropy)

            @staticmethod
            def backward(ctx: Any, *grads: Any) -> Any:
                outer._launch()
                with outer._uncounted():
                    return tuple(torch.zeros_like(p) for p in params)

        out = Graphed.apply(*params)
        return out[0], out[1] if entropy else None


def ours_captured(model: Any, ro: Any, adv: torch.Tensor, cfg: Any, replays: Replays) -> Any:
    """``ours`` on the captured path (``capture_update``: packs padded to buckets), each pass replayed
    (``Replays``)."""
    from grpo_core.update import logprobs

    run = ours(model, ro, adv, cfg.model_copy(update={"capture_update": True}))

    def captured() -> None:
        before = logprobs.update_graphs
        logprobs.update_graphs = lambda m: replays  # type: ignore[assignment]
        try:
            run()
        finally:
            logprobs.update_graphs = before

    return captured


def syncs_on_meta(config: Any, ro: Any, adv: torch.Tensor, cfg: Any) -> tuple[int, dict[str, int]]:
    """Ours with the model on ``meta`` (the device) and the rollout on the CPU (the host): the syncs a GPU would
    make, by site (``SyncsOnMeta``). fp32: autocast has no meta device."""
    from grpo_core.update.step import policy_update

    model = our_policy(config, "meta")
    mode = SyncsOnMeta()
    try:
        with mode:
            policy_update(model, ro, adv, cfg, None)
    except (RuntimeError, NotImplementedError) as e:  # a read whose shape depends on the data: the run stops there
        mode.sites[f"stopped: {str(e).splitlines()[0][:160]}"] += 1
    return sum(mode.sites.values()), dict(mode.sites.most_common())


def trl_update(config: Any, ro: Any, adv: torch.Tensor, a: argparse.Namespace) -> Any:
    """TRL 1.16's update on the same rows: its reference pass (the adapter disabled), then ``compute_loss`` and the
    backward, as its ``training_step`` runs them, on a GRPOTrainer built as bench/trl_side.py builds it."""
    import tempfile
    import warnings

    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoTokenizer

    warnings.filterwarnings("ignore")
    from trl import GRPOConfig, GRPOTrainer

    from bench.real_models import smollm2_tokenizer

    n = a.prompts * a.group_size
    args = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="bench-counts-"),
        per_device_train_batch_size=n,
        num_generations=a.group_size,
        generation_batch_size=n,
        max_completion_length=a.max_tokens,
        beta=0.04,
        loss_type="grpo",
        bf16=True,
        use_cpu=True,
        gradient_checkpointing=a.checkpointing,
        report_to="none",
        disable_tqdm=True,
        max_steps=1,
        save_strategy="no",
        logging_steps=1,
    )
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    tok = AutoTokenizer.from_pretrained(smollm2_tokenizer())
    ds = Dataset.from_list([{"prompt": "x"}] * n)
    trainer = GRPOTrainer(model=base_model(config), reward_funcs=lambda completions, **k: [0.0] * len(completions),
                          args=args, train_dataset=ds, processing_class=tok, peft_config=lora)  # fmt: skip
    model = trainer.model
    model.train()
    trainer.current_gradient_accumulation_steps = 1  # what its training_step sets before compute_loss
    ids = torch.cat([ro.prompt_ids, ro.completion_ids], dim=1)
    mask = torch.cat([ro.prompt_mask, ro.completion_mask], dim=1)
    keep = ro.completion_ids.shape[1]

    def run() -> None:
        with torch.no_grad(), model.disable_adapter():
            ref, _, _ = trainer._get_per_token_logps_and_entropies(model, ids, mask, keep, n)
        inputs = {"prompt_ids": ro.prompt_ids, "prompt_mask": ro.prompt_mask, "completion_ids": ro.completion_ids,
                  "completion_mask": ro.completion_mask, "advantages": adv, "ref_per_token_logps": ref,
                  "old_per_token_logps": None, "num_items_in_batch": ro.completion_mask.sum()}  # fmt: skip
        loss = trainer.compute_loss(model, inputs)
        trainer.accelerator.backward(loss)
        model.zero_grad(set_to_none=True)

    return run


def measure(name: str, a: argparse.Namespace) -> dict[str, Any]:
    """One shape's counts: ours (CPU counts, syncs on meta) and, unless ``--no-trl``, TRL's."""
    config = narrow(name, a.head_dim)
    ro, adv = rollout(config.vocab_size, a)
    cfg = config_for(a)
    t0 = time.perf_counter()
    row: dict[str, Any] = {"model": name, "ours": asdict(count(ours(our_policy(config), ro, adv, cfg)))}
    row["ours"]["syncs_cpu_reads"] = row["ours"].pop("syncs")
    row["ours"]["syncs"], row["ours"]["sync_sites"] = syncs_on_meta(config, ro, adv, cfg)
    replays = Replays()
    row["captured"] = asdict(count(ours_captured(our_policy(config), ro, adv, cfg, replays), replays))
    if not a.no_trl:
        row["trl"] = asdict(count(trl_update(config, ro, adv, a)))
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def report(rows: list[dict[str, Any]]) -> str:
    lines = ["| model | side | launches | dispatches | host syncs | Python calls |", "|---|---|---|---|---|---|"]
    for r in rows:
        for side in ("ours", "captured", "trl"):
            if side in r:
                c = r[side]
                syncs = c["syncs"] if side != "captured" else r["ours"]["syncs"]  # the same host code, graphs or not
                lines.append(f"| {r['model']} | {side} | {c['launches']} | {c['dispatches']} | {syncs} | "
                             f"{c['python_calls']} |")  # fmt: skip
    for r in rows:
        lines.append(f"\n{r['model']}, ours: syncs by site {r['ours']['sync_sites']}; top ops {r['ours']['top_ops']}")
        if "trl" in r:
            lines.append(f"{r['model']}, TRL: top ops {r['trl']['top_ops']}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(DEFAULT_MODELS))
    p.add_argument("--prompts", type=int, default=2)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--prompt-tokens", type=int, default=40)
    p.add_argument("--checkpointing", action="store_true", help="gradient checkpointing on, both sides")
    p.add_argument("--no-trl", action="store_true", help="ours only")
    p.add_argument("--head-dim", type=int, default=8, help="narrowed heads' width (no count changes)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    rows = []
    for name in a.models.split(","):
        rows.append(measure(name, a))
        print(json.dumps(rows[-1]), flush=True)
    print(report(rows))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"update-counts-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"args": vars(a), "rows": rows}, indent=2))
    print(f"written {out}")


if __name__ == "__main__":
    main()
