"""``TrainingModel``: a base model with a LoRA adapter, held resident and driven one request at a time.

The requests are Tinker's: ``forward_backward`` adds the gradient of a loss (grpo_core.training_api.losses) over a
batch of datums to what earlier calls left; ``optim_step`` takes one AdamW step on the sum and clears it;
``save_state`` / ``load_state`` keep or restore the adapter and the optimizer; ``save_adapter`` writes the plain
PEFT adapter that samplers and serving load.

The adapter: rank r, α = 32 whatever the rank (Tinker's choice, Schulman et al., "LoRA Without Regret", 2025: the
update is scaled by α/r, so the best learning rate barely moves with r), on the attention projections (q, k, v,
o_proj), the MLP's (gate, up, down_proj) or both (peft's "all-linear": every linear layer but the LM head). The LM
head is not adapted: the merged sampler shares it with the input embedding on tied models, where an adapted head
could not be folded in.

Per datum of T tokens, position i's log-prob is log softmax(f(tokens[: i + 1]))[target_tokens[i]] at
temperature 1. The datums run in micro-batches of at most ``micro_batch_tokens`` positions (sorted by length,
right-padded: attention is causal, so padding after a sequence changes nothing before it), each micro-batch's loss
backpropagated before the next: the losses are sums over tokens, so the gradients add up to the batch's. The LM head
runs on the loss positions' hidden states in chunks (grpo_core.update.fused_head), so no (B, T, V) logits tensor
exists. Parameters' ``.grad`` accumulate across calls until ``optim_step``, as in Tinker.

Exactness: ``save_state`` writes the adapter (fp32 safetensors) and AdamW's state (its moments and step count); a
fresh ``TrainingModel`` of the same base and rank that loads it computes the next step bit for bit as the one that
saved it would have (the gradients of a ``forward_backward`` not yet stepped are not saved).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from torch import Tensor

from grpo_core.checkpoint import CheckpointError, load_adapter_weights
from grpo_core.errors import UserError
from grpo_core.hardware.device import HOST, release_device_memory, resolve_device, resolve_precision
from grpo_core.policy import load_policy
from grpo_core.rollout.batch import right_padded
from grpo_core.schemas.config import GRPOConfig, LoraConfig
from grpo_core.training_api.losses import loss_of
from grpo_core.training_api.shared import SharedBases
from grpo_core.training_api.spec import Datum, check_adam, check_batch, loss_spec
from grpo_core.update.captured import capture_problem, captured_passes, static_pack
from grpo_core.update.fused_head import head_logprobs
from grpo_core.update.logprobs import compute_dtype, packed_token_logprobs
from grpo_core.update.packing import head_problem, pack_sequences, packing_problem
from grpo_core.update.step import attention_kernels
from grpo_core.update.token_logprob import logprobs_and_entropy

LORA_ALPHA = 32.0
ATTENTION_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj"]
MLP_MODULES = ["gate_proj", "up_proj", "down_proj"]
MICRO_BATCH_TOKENS = 4096  # padded positions per forward/backward pass
OPTIMIZER_FILE = "optimizer.pt"
STATE_FILE = "state.json"  # written last: a folder without it is an unfinished save
STATE_FORMAT = 1


def target_modules(train_mlp: bool, train_attn: bool) -> list[str] | Literal["all-linear"]:
    """The modules the adapter wraps (peft ``target_modules``)."""
    if train_mlp and train_attn:
        return "all-linear"
    if train_attn:
        return list(ATTENTION_MODULES)
    if train_mlp:
        return list(MLP_MODULES)
    raise ValueError("train_mlp and train_attn are both false: the adapter would train nothing")


def run_config(
    rank: int, train_mlp: bool, train_attn: bool, device: str = "auto", precision: str = "auto"
) -> GRPOConfig:
    """What a training run's base is loaded with: its adapter (rank, α = ``LORA_ALPHA``, its modules), on ``device`` in
    ``precision``, both resolved (grpo_core.training_api.shared keys bases by it)."""
    place = resolve_device(device)
    resolved, _ = resolve_precision(precision, place)
    lora = {"rank": rank, "alpha": LORA_ALPHA, "target_modules": target_modules(train_mlp, train_attn)}
    return GRPOConfig.model_validate({"lora": lora, "device": str(place), "precision": resolved})


def run_shape(lora: LoraConfig) -> tuple[int, bool, bool] | None:
    """The (rank, train_mlp, train_attn) a training run is created with to have the adapter shape ``lora`` (a job's:
    the run may then share a pool's resident, grpo_core.training_api.shared.SharedBases.lend); None when no run has
    it (an α other than ``LORA_ALPHA``, dropout, other modules)."""
    if lora.alpha != LORA_ALPHA or lora.dropout:
        return None
    for mlp, attn in ((True, True), (False, True), (True, False)):
        if lora.target_modules == target_modules(mlp, attn):
            return lora.rank, mlp, attn
    return None


def target_logprobs(model: Any, ids: Tensor, targets: Tensor, mask: Tensor) -> Tensor:
    """(N,) float32 log π(targets[b, t] | ids[b, : t + 1]) at temperature 1 for the N positions where ``mask``
    (B, T) bool is true, in row-major order; ``ids`` (B, T) right-padded, no attention mask (causal). The head
    runs on those positions only, in chunks (grpo_core.update.fused_head), for a model whose logits are
    ``lm_head(decoder(...))``; for any other, from the model's full (B, T, V) logits
    (grpo_core.update.token_logprob)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    rows, cols = torch.nonzero(mask, as_tuple=True)
    if head_problem(model) is None:
        hidden = base.get_decoder()(input_ids=ids, use_cache=False).last_hidden_state  # (B, T, H)
        logp, _ = head_logprobs(hidden[rows, cols], base.get_output_embeddings(), targets[rows, cols], temperature=1.0)
        return logp
    logits = model(input_ids=ids, use_cache=False).logits  # (B, T, V)
    logp_all, _ = logprobs_and_entropy(logits, targets, entropy_grad=None)
    return logp_all[rows, cols]


@dataclass(frozen=True)
class ForwardResult:
    logprobs: list[list[float]]  # per datum, one per token: log-prob of target_tokens[i] at position i
    metrics: dict[str, float]  # the loss's metrics over the whole batch (grpo_core.training_api.losses)


def micro_batches(lengths: list[int], budget: int, *, packed: bool) -> list[list[int]]:
    """Datum indices grouped, shortest first, so that a micro-batch's tokens (``packed``: their sum; padded: rows ×
    longest) stay within ``budget`` (a longer datum runs alone)."""
    batches: list[list[int]] = []
    current: list[int] = []
    tokens = 0  # the current micro-batch's tokens
    for i in sorted(range(len(lengths)), key=lambda k: lengths[k]):
        cost = tokens + lengths[i] if packed else (len(current) + 1) * lengths[i]
        if current and cost > budget:
            batches.append(current)
            current, tokens = [], 0
        current.append(i)
        tokens += lengths[i]
    if current:
        batches.append(current)
    return batches


class TrainingModel:
    """``model_dir``'s base model with a fresh LoRA adapter of ``rank`` (B = 0: it starts as the base model),
    initialised from ``seed``, on ``device`` in ``precision`` ("fp32", "bf16" or "auto", grpo_core.hardware.device).
    ``base_name``: what the saved adapter names as its base model (default grpo_core.models.catalog's).
    ``shared``: the base models resident for several runs (grpo_core.training_api.shared): this run's adapter takes
    the slot of the base it fits before each call that reads or writes it (``hold``), with the same results as
    alone; without it the run loads a base of its own. ``exact``: its calls always compute alone, bit for bit as a
    run on a base of its own, never in a pass shared with other runs' (grpo_core.training_api.together)."""

    def __init__(
        self,
        model_dir: Path,
        *,
        rank: int,
        seed: int,
        device: str = "cpu",
        precision: str = "fp32",
        train_mlp: bool = True,
        train_attn: bool = True,
        base_name: str | None = None,
        micro_batch_tokens: int = MICRO_BATCH_TOKENS,
        shared: SharedBases | None = None,
        exact: bool = False,
    ) -> None:
        cfg = run_config(rank, train_mlp, train_attn, device, precision)
        self.precision = cfg.precision
        self.shared, self.base = shared, None
        if shared is None:
            self.model, self.tokenizer = load_policy(model_dir, cfg, seed, base_name=base_name)
        else:  # the base resident once for the runs that fit it, this run's adapter in its slot while it computes
            self.base = shared.enter(self, model_dir, cfg, seed, base_name)
            self.model, self.tokenizer = self.base.model, self.base.tokenizer
        self.model_dir, self.rank, self.micro_batch_tokens = model_dir, rank, micro_batch_tokens
        self.exact = exact  # its forward_backward calls never share a pass with other runs' (training_api.together)
        self.params = list(self.base.slot) if self.base else [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = self._new_optimizer()
        self.version = 0  # +1 per optim_step and load_state: which weights are resident
        self.device: torch.device = self.params[0].device
        # the jobs' update path (grpo_core.update.packing): datums packed without padding, one attention call per
        # layer, the head fused with the log-prob; a model that cannot pack runs right-padded micro-batches
        self.packed = packing_problem(self.model) is None
        # and its captured passes on a GPU: packs padded to buckets, each pass replayed as a CUDA graph
        self.captured = self.packed and capture_problem(self.model, self.device) is None
        self.vocab_size = int(self.model.get_input_embeddings().weight.shape[0])
        # the longest datum: positions past the model's own are refused, not extrapolated
        self.max_tokens: int | None = getattr(self.model.get_base_model().config, "max_position_embeddings", None)

    def hold(self) -> None:
        """This run's adapter, gradients and RNG states in the shared base's slot (a run alone always holds it)."""
        if self.base is not None:
            self.base.hold(self)

    def _new_optimizer(self) -> torch.optim.AdamW:
        """AdamW over the adapter; its hyperparameters are set by each ``optim_step``."""
        return torch.optim.AdamW(self.params, lr=0.0)

    def autocast(self) -> Any:
        """bf16 autocast in that precision; without its weight cache under graphs, which would replay a stale cast."""
        bf16 = self.precision == "bf16"
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=bf16, cache_enabled=not self.captured)

    def forward_backward(
        self, data: list[Datum], loss_fn: str, config: dict[str, float], *, backward: bool = True
    ) -> ForwardResult:
        """Per-token log-probs of ``data``'s targets and the loss's metrics; with ``backward`` the loss's gradient
        is added to the adapter's ``.grad`` (no graph is built without it). Raises spec.BatchError for a request
        spec.check_batch refuses."""
        check_batch(loss_fn, data, config, self.vocab_size, self.max_tokens)
        self.hold()
        # a call adds its whole gradient or none of it: what earlier calls left is restored if one fails midway
        # (an out-of-memory in a late micro-batch, a non-finite loss), so a retry never adds a part twice
        before = [None if p.grad is None else p.grad.clone() for p in self.params] if backward else None
        try:
            return self._forward_backward(data, loss_fn, config, backward)
        except BaseException:
            if before is not None:
                for p, g in zip(self.params, before, strict=True):
                    p.grad = g
            raise

    def _forward_backward(
        self, data: list[Datum], loss_fn: str, config: dict[str, float], backward: bool
    ) -> ForwardResult:
        spec = loss_spec(loss_fn)
        inputs = [self.loss_inputs(spec.name, d, config) for d in data]
        lengths = [len(d.tokens) for d in data]
        out: list[Tensor] = [torch.empty(0, device=HOST)] * len(data)
        for idx in micro_batches(lengths, self.micro_batch_tokens, packed=self.packed):
            batch = {k: torch.cat([inputs[i][k] for i in idx]).to(self.device) for k in spec.inputs}
            with torch.set_grad_enabled(backward), self.autocast(), attention_kernels(self.device.type, self.packed):
                logp = self._logprobs([data[i] for i in idx])  # (N,)
                loss = loss_of(loss_fn, logp, batch, config, [lengths[i] for i in idx]).loss if backward else None
            if loss is not None:
                if not torch.isfinite(loss):
                    raise UserError(
                        f"the {loss_fn} loss of datums {idx} is not finite ({float(loss.detach())}): check their "
                        "logprobs and advantages (a sampler log-prob of -inf, a huge advantage); no gradient was added"
                    )
                with attention_kernels(self.device.type, self.packed):
                    torch.autograd.backward(loss)
            for i, part in zip(idx, torch.split(logp.detach().to(HOST), [lengths[i] for i in idx]), strict=True):
                out[i] = part
        everything = {k: torch.cat([x[k] for x in inputs]) for k in spec.inputs}
        metrics = loss_of(loss_fn, torch.cat(out), everything, config, lengths).metrics
        return ForwardResult([x.tolist() for x in out], metrics)

    def _logprobs(self, data: list[Datum]) -> Tensor:
        """(N,) log-probs of ``data``'s targets, datum after datum (N: their tokens), in the grad and autocast mode
        the caller set: packed (``self.packed``) or right-padded."""
        tokens = [list(d.tokens) for d in data]
        targets = [[int(t) for t in d.inputs["target_tokens"]] for d in data]
        if self.packed:
            packed = pack_sequences(tokens, targets)
            packed = (static_pack(packed) if self.captured else packed).to(self.device, compute_dtype(self.model))
            with captured_passes(self.model, self.captured):  # (compute_dtype: under _autocast)
                logp, _ = packed_token_logprobs(self.model, packed, temperature=1.0)
            return logp
        lengths = [len(t) for t in tokens]
        ids = right_padded(tokens, 0).to(self.device)
        width = torch.arange(ids.shape[1], device=self.device)
        mask = width.unsqueeze(0) < torch.tensor(lengths, device=self.device).unsqueeze(1)
        return target_logprobs(self.model, ids, right_padded(targets, 0).to(self.device), mask)

    def loss_inputs(self, loss_fn: str, datum: Datum, config: dict[str, float]) -> dict[str, Tensor]:
        """Every input of the loss for ``datum`` as a host tensor, an optional one left out filled with its
        default (so a batch's datums concatenate whichever of them gave it)."""
        spec = loss_spec(loss_fn)
        n = len(datum.tokens)
        out = {}
        for name, input_spec in spec.inputs.items():
            dtype = torch.long if input_spec.dtype == "int64" else torch.float32
            if name in datum.inputs:
                out[name] = torch.tensor(list(datum.inputs[name]), dtype=dtype, device=HOST)
            else:
                out[name] = torch.full((n,), spec.fill(name, config), dtype=dtype, device=HOST)
        return out

    def optim_step(
        self, lr: float, beta1: float, beta2: float, eps: float, weight_decay: float, grad_clip_norm: float
    ) -> dict[str, float]:
        """One AdamW step (decoupled weight decay, torch.optim.AdamW) on the gradients accumulated since the last
        step, clipped to a global norm of ``grad_clip_norm`` (0: not clipped), then the gradients cleared. A
        step without any forward_backward is a step on a zero gradient (the moments decay, weight decay
        applies), not a skipped one. Metrics: the gradient's norm before clipping, the learning rate."""
        check_adam(lr, beta1, beta2, eps, weight_decay, grad_clip_norm)
        self.hold()
        for p in self.params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        grads = [p.grad for p in self.params if p.grad is not None]
        norm = torch.nn.utils.get_total_norm(grads)
        if not math.isfinite(float(norm)):
            self.optimizer.zero_grad(set_to_none=True)
            raise UserError(
                "the accumulated gradient is not finite (inf or NaN): the step was not taken and the gradient was "
                "cleared; check the batch's advantages and logprobs, or lower the learning rate"
            )
        if grad_clip_norm > 0:
            torch.nn.utils.clip_grads_with_norm_(self.params, grad_clip_norm, norm)
        for group in self.optimizer.param_groups:
            group.update(lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.version += 1
        return {"grad_norm:mean": float(norm), "learning_rate:mean": float(lr)}

    def save_adapter(self, path: Path) -> Path:
        """The adapter as a plain PEFT folder (adapter_config.json, adapter_model.safetensors): what
        grpo_core.policy.load_adapter, PeftModel.from_pretrained and vLLM load."""
        self.hold()
        path.mkdir(parents=True, exist_ok=True)
        # save_embedding_layers=False: the embeddings are never resized here (grpo_core.checkpoint says why)
        self.model.save_pretrained(path, save_embedding_layers=False)
        return path

    def save_state(self, path: Path) -> Path:
        """The adapter (``save_adapter``), AdamW's state, and ``state.json`` last (rank, α, target modules): all
        that a fresh model needs to continue exactly (``load_state``)."""
        (path / STATE_FILE).unlink(missing_ok=True)  # an overwrite is unfinished until its new state.json lands
        self.save_adapter(path)
        torch.save({"optimizer": self.optimizer.state_dict()}, path / OPTIMIZER_FILE)
        own = self.model.peft_config["default"]
        state = {"format": STATE_FORMAT, "rank": own.r, "alpha": own.lora_alpha, "modules": sorted(own.target_modules)}
        (path / STATE_FILE).write_text(json.dumps(state, indent=2))
        return path

    def load_state(self, path: Path, *, optimizer: bool) -> None:
        """The adapter weights saved in ``path`` (by ``save_state`` or ``save_adapter``), and AdamW's state when
        ``optimizer`` (a fresh AdamW otherwise); pending gradients are dropped. Raises CheckpointError for a
        folder whose adapter has another rank, scale or set of modules than this model's, or that has no
        optimizer state when asked for it."""
        config_file = path / "adapter_config.json"
        if not config_file.is_file():
            raise CheckpointError(f"{path} holds no adapter_config.json: not a saved state or adapter")
        saved = json.loads(config_file.read_text())
        own = self.model.peft_config["default"]
        theirs = (saved.get("r"), float(saved.get("lora_alpha", 0)), sorted(saved.get("target_modules") or []))
        mine = (own.r, float(own.lora_alpha), sorted(own.target_modules))
        if theirs != mine:
            raise CheckpointError(
                f"the saved adapter (rank, alpha, modules) {theirs} does not fit this model's {mine}: load it into a "
                "model created with the same rank and trained modules"
            )
        state = None
        if optimizer:
            if not (path / STATE_FILE).is_file() or not (path / OPTIMIZER_FILE).is_file():
                raise CheckpointError(f"{path} holds no optimizer state: it was saved as weights only")
            state = torch.load(path / OPTIMIZER_FILE, map_location="cpu", weights_only=True)
        self.hold()
        load_adapter_weights(self.model, path)
        self.optimizer = self._new_optimizer()
        if state is not None:
            self.optimizer.load_state_dict(state["optimizer"])  # moves the moments to the parameters' device
        self.optimizer.zero_grad(set_to_none=True)
        self.version += 1

    def close(self) -> None:
        """Drop the model and the optimizer and hand their device memory back (once); a run on a shared base leaves
        it (freed with its last run)."""
        if "model" not in vars(self):
            return
        del self.model, self.optimizer, self.params, self.tokenizer
        if self.shared is not None and self.base is not None:
            self.shared.leave(self, self.base)
            self.base = None
        release_device_memory()
