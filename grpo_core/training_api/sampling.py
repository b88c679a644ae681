"""``Sampler``: token-level sampling for the training API, on the engine the jobs sample with.

A Sampler holds the merged rollout engine (grpo_core.rollout.engines.merged: a copy of the policy with the adapter
folded into its weights, in the model's dtype) over one of: a ``TrainingModel``'s resident adapter (re-merged
before a sample whenever its ``version`` moved), a base model with a saved adapter (grpo_core.policy.load_adapter),
or a base model alone. ``sample`` draws ``num_samples`` continuations of one token prompt with the engine's decode
loop (grpo_core.rollout.engines.decode), whose noise is keyed by (seed, sample index, token): a seed reproduces
its samples exactly, whatever else the process sampled. A call without a seed takes the next value of one counter
for the whole process, started at a random value: unseeded calls never share noise, also across samplers (an RL
loop that makes a new sampling client per step must not draw the same uniforms at every step).

What a sequence holds:

- ``tokens``: the sampled ids. A sequence that stops includes the token that stopped it (EOS or a stop token id),
  so ``prompt + tokens`` is exactly what the model saw and what an RL datum trains on, stop token included (the
  model must learn to stop); vLLM likewise returns a stop token id among its token ids.
- Stops: the model's EOS ids always stop (vLLM's default; the SDK has no ``ignore_eos``). ``stop`` adds token ids
  (the first one sampled ends the sequence) or strings: the sequence ends at the earliest token after which the
  decoded completion contains one of them, that token included (the string may straddle tokens), as vLLM keeps
  the token ids of a stop string's last token. ``stop_reason`` is "stop" for any of these, "length" when
  ``max_tokens`` tokens came without one. Stop ids end the decode loop; stop strings are looked for after it
  (the loop knows ids only), so a sequence cut by a string cost the tokens sampled after the cut.
- ``logprobs``: per sampled token, its log-prob under the distribution that drew it: softmax(z / T) renormalised
  within the top-p nucleus (temperature T > 0). That is the behaviour policy q an importance-sampling loss needs; at
  T = 1 and top_p = 1 it is the model's own log-prob, which forward_backward computes again (up to the sampling
  copy's rounding: exact in fp32 up to ~1e-6, looser in bf16). Greedy (T = 0) draws from no distribution: its
  tokens get their log-prob under softmax(z), one extra scoring pass.
- ``prompt_logprobs`` (when asked): log π(prompt[i] | prompt[:i]) under the sampled weights at temperature 1, None
  at position 0 (nothing predicts the first token).
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from grpo_core.hardware.device import HOST, release_device_memory, resolve_device, resolve_precision
from grpo_core.policy import load_adapter, load_policy
from grpo_core.rollout.batch import eos_ids, right_padded
from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.engines.decode import decode_continuations
from grpo_core.rollout.engines.merged import DecodeMode, MergedEngine
from grpo_core.schemas.config import GRPOConfig
from grpo_core.training_api.model import TrainingModel, target_logprobs
from grpo_core.training_api.spec import BatchError, Stop, check_sampling, stop_lists

StopReason = Literal["stop", "length"]
_UNSEEDED = itertools.count(secrets.randbits(32))  # the seeds of calls that give none (the module docstring)


def unseeded() -> int:
    """The seed of a call that gives none: the next value of one counter for the whole process, so no two unseeded
    calls share noise, whichever decode they run in (grpo_core.training_api.batched's too)."""
    return next(_UNSEEDED)


@dataclass(frozen=True)
class SampledSequence:
    tokens: list[int]
    logprobs: list[float]  # one per token
    stop_reason: StopReason


@dataclass(frozen=True)
class SampleCall:
    """One ``sample`` request's parameters (``Sampler.sample``)."""

    prompt: list[int]
    num_samples: int
    max_tokens: int
    temperature: float
    top_p: float = 1.0
    seed: int | None = None
    stop: Stop = None
    prompt_logprobs: bool = False


@dataclass(frozen=True)
class SampleOutput:
    sequences: list[SampledSequence]
    prompt_logprobs: list[float | None] | None  # one per prompt token, None first; None when not asked
    decoded_with: int = 1  # the calls that shared its decode, itself included (Sampler.sample_many)


def stop_string_end(tokens: list[int], stops: list[str], tokenizer: Any) -> int | None:
    """The length of the shortest prefix of ``tokens`` whose decoded text contains one of ``stops``, or None.

    A binary search over prefix lengths, so O(log n) decodes instead of one per token: the text of a longer
    prefix extends that of a shorter one (up to a partial character at its end), so once a prefix contains a
    stop string every longer one does."""

    def hit(k: int) -> bool:
        text = tokenizer.decode(tokens[:k], skip_special_tokens=True)
        return any(s in text for s in stops)

    if not stops or not tokens or not hit(len(tokens)):
        return None
    lo, hi = 1, len(tokens)  # hit(hi) holds
    while lo < hi:
        mid = (lo + hi) // 2
        if hit(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _sampling_dtype(model: Any) -> torch.dtype:
    """The sampler's dtype: the base weights' (bf16 when the model was loaded in bf16, else fp32)."""
    dtype: torch.dtype = model.get_input_embeddings().weight.dtype
    return dtype


class Sampler:
    """Samples ``model`` (a PEFT model, as grpo_core.policy loads it) through a merged engine in the base weights'
    dtype. ``version``: the weights' version now; the engine is re-merged before a sample when it moved.
    ``owns_model``: ``close`` also frees the model (it was loaded for this sampler). ``hold``: called before the
    engine reads the model's adapter (a training run on a shared base puts its values in the slot)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        version: Callable[[], int] = lambda: 0,
        owns_model: bool = False,
        decode_mode: DecodeMode = "auto",
        hold: Callable[[], None] = lambda: None,
    ) -> None:
        self.model, self.tokenizer, self.version, self.owns_model = model, tokenizer, version, owns_model
        self.hold = hold
        self.training: TrainingModel | None = None  # the run whose resident weights it samples (for_training)
        hold()
        self.engine = MergedEngine(model, tokenizer, dtype=_sampling_dtype(model), decode_mode=decode_mode)
        self.synced = version()  # the engine merged the weights as they are now
        self.eos = eos_ids(model, tokenizer)
        self.vocab_size = int(model.get_input_embeddings().weight.shape[0])
        self.max_context: int | None = getattr(model.get_base_model().config, "max_position_embeddings", None)
        self.decodes = 0  # decode loops run: sample_many shares one among the calls it can batch

    @classmethod
    def for_training(cls, training: TrainingModel, *, decode_mode: DecodeMode = "auto") -> Sampler:
        """A sampler of ``training``'s resident weights: whatever its last optim_step or load_state left."""
        sampler = cls(
            training.model,
            training.tokenizer,
            version=lambda: training.version,
            decode_mode=decode_mode,
            hold=training.hold,
        )
        sampler.training = training
        return sampler

    @classmethod
    def load(
        cls,
        model_dir: Path,
        adapter_dir: Path | None = None,
        *,
        device: str = "cpu",
        precision: str = "fp32",
        decode_mode: DecodeMode = "auto",
    ) -> Sampler:
        """A sampler of ``model_dir``'s base model with the PEFT adapter in ``adapter_dir`` (``save_adapter``'s
        folder; its own config says its rank and modules), or of the base model alone (a fresh adapter, whose B
        is zero: it computes exactly the base model)."""
        place = resolve_device(device)
        prec, _ = resolve_precision(precision, place)
        cfg = GRPOConfig.model_validate({"device": str(place), "precision": prec})
        if adapter_dir is None:
            lora = cfg.lora.model_copy(update={"rank": 1})  # nothing to learn: the smallest adapter
            model, tokenizer = load_policy(model_dir, cfg.model_copy(update={"lora": lora}), 0)
        else:
            model, tokenizer = load_adapter(model_dir, adapter_dir, cfg)
        model.requires_grad_(False)  # sampling only
        return cls(model, tokenizer, owns_model=True, decode_mode=decode_mode)

    def sample(
        self,
        prompt: list[int],
        num_samples: int,
        max_tokens: int,
        temperature: float,
        top_p: float = 1.0,
        seed: int | None = None,
        stop: Stop = None,
        prompt_logprobs: bool = False,
    ) -> SampleOutput:
        """``num_samples`` continuations of ``prompt`` (see the module docstring for what they hold). Raises
        spec.BatchError for parameters spec.check_sampling refuses."""
        call = SampleCall(prompt, num_samples, max_tokens, temperature, top_p, seed, stop, prompt_logprobs)
        out = self.sample_many([call])[0]
        if isinstance(out, BatchError):
            raise out
        return out

    def sample_many(self, calls: Sequence[SampleCall]) -> list[SampleOutput | BatchError]:
        """Each call's output (or the BatchError that refuses it), the calls that can share a decode decoded
        together: one decode per ``_batch_key`` (``self.decodes`` counts them). A call's rows keep a seed of their
        own and their row numbers, so they draw the noise they would draw alone, and are cut at their own
        ``max_tokens`` and stop strings."""
        out: list[SampleOutput | BatchError | None] = [None] * len(calls)
        groups: dict[tuple[object, ...], list[int]] = {}
        for i, call in enumerate(calls):
            try:
                self.check(call)
            except BatchError as exc:
                out[i] = exc
                continue
            groups.setdefault(self._batch_key(call, i), []).append(i)
        if groups:
            self._sync()
        for idx in groups.values():
            for i, result in zip(idx, self._decode([calls[i] for i in idx]), strict=True):
                out[i] = result
        return [o for o in out if o is not None]

    def check(self, call: SampleCall) -> None:
        """Raise the BatchError that refuses ``call`` on this sampler's model, if any."""
        check_sampling(
            call.max_tokens,
            call.temperature,
            call.top_p,
            -1,
            call.num_samples,
            prompt=call.prompt,
            stop=call.stop,
            vocab_size=self.vocab_size,
            max_context=self.max_context,
        )

    def _batch_key(self, call: SampleCall, i: int) -> tuple[object, ...]:
        """Calls with one key share a decode: unseeded calls at the same temperature, nucleus and stop ids (the
        decode loop's). A seeded call asks to draw exactly what it draws any other time, so it decodes alone: a
        row's logits computed in a bigger batch can round differently (~1 ulp, grpo_core.rollout.engines.base.
        Sampling), which could flip a near-tie token."""
        if call.seed is not None:
            return ("seeded", i)
        _, ids = stop_lists(call.stop)
        return (call.temperature, call.top_p, tuple(sorted(set(self.eos) | set(ids))))

    def _decode(self, calls: list[SampleCall]) -> list[SampleOutput]:
        """One decode of every row of ``calls`` (one batch key), then each call's rows cut to its own length and
        stop strings, scored when greedy."""
        first = calls[0]
        stop_ids = sorted(set(self.eos) | set(stop_lists(first.stop)[1]))
        seeds = [c.seed if c.seed is not None else unseeded() for c in calls]
        sampling = Sampling(
            group_size=1,
            max_new_tokens=max(c.max_tokens for c in calls),
            temperature=first.temperature,
            top_p=first.top_p,
            seed=seeds[0],
        )
        pad = self.tokenizer.pad_token_id
        raw = decode_continuations(
            self.engine.model,
            [list(c.prompt) for c in calls for _ in range(c.num_samples)],
            sampling,
            [j for c in calls for j in range(c.num_samples)],
            stop_ids=stop_ids,
            pad_id=pad if pad is not None else self.eos[0],
            static=self.engine.static,
            seeds=[seed for c, seed in zip(calls, seeds, strict=True) for _ in range(c.num_samples)],
        )
        self.decodes += 1
        outputs = []
        start = 0
        for call in calls:
            rows = raw[start : start + call.num_samples]
            start += call.num_samples
            outputs.append(self.output(call, rows, stop_ids, len(calls)))
        return outputs

    def output(
        self, call: SampleCall, raw: list[tuple[list[int], list[float] | None]], stop_ids: list[int], shared: int
    ) -> SampleOutput:
        strings, _ = stop_lists(call.stop)
        sequences = []
        for all_tokens, all_logps in raw:
            tokens = all_tokens[: call.max_tokens]  # a row decoded past its call's length keeps what it had then
            end = stop_string_end(tokens, strings, self.tokenizer)
            stopped = end is not None or (bool(tokens) and tokens[-1] in stop_ids)
            cut = end if end is not None else len(tokens)
            sequences.append((tokens[:cut], None if all_logps is None else all_logps[:cut], stopped))
        scored = self._score(call.prompt, [s[0] for s in sequences]) if call.temperature == 0 else None
        out = [
            SampledSequence(
                tokens=tokens,
                logprobs=logps if logps is not None else scored[i] if scored is not None else [],
                stop_reason="stop" if stopped else "length",
            )
            for i, (tokens, logps, stopped) in enumerate(sequences)
        ]
        return SampleOutput(out, self._prompt_logprobs(call.prompt) if call.prompt_logprobs else None, shared)

    def _sync(self) -> None:
        """Re-merge the engine's weights when the model's version moved since the last merge."""
        now = self.version()
        if now != self.synced:
            self.hold()
            self.engine.sync(self.model, now)
            self.synced = now

    @torch.inference_mode()
    def _score(self, prompt: Sequence[int], completions: list[list[int]]) -> list[list[float]]:
        """Per completion, log π(token | prompt, earlier tokens) of each of its tokens under the sampling copy
        at temperature 1."""
        if not any(completions):
            return [[] for _ in completions]
        rows = [list(prompt) + c for c in completions]
        ids = right_padded(rows, 0)
        width = ids.shape[1]
        targets = torch.cat([ids[:, 1:], ids.new_zeros((ids.shape[0], 1))], dim=1)
        starts = len(prompt) - 1  # position predicting the first completion token
        cols = torch.arange(width, device=HOST).unsqueeze(0)
        lengths = torch.tensor([len(c) for c in completions], device=HOST).unsqueeze(1)
        mask = (cols >= starts) & (cols < starts + lengths)
        device = next(self.engine.model.parameters()).device
        logp = target_logprobs(self.engine.model, ids.to(device), targets.to(device), mask.to(device))
        return [part.tolist() for part in torch.split(logp.to(HOST), [len(c) for c in completions])]

    @torch.inference_mode()
    def _prompt_logprobs(self, prompt: list[int]) -> list[float | None]:
        """None, then log π(prompt[i] | prompt[:i]) for i ≥ 1 under the sampling copy at temperature 1."""
        if len(prompt) < 2:
            return [None]
        device = next(self.engine.model.parameters()).device
        ids = torch.tensor([prompt], dtype=torch.long, device=device)
        targets = torch.cat([ids[:, 1:], ids.new_zeros((1, 1))], dim=1)
        mask = torch.ones_like(ids, dtype=torch.bool)
        mask[0, -1] = False
        logp = target_logprobs(self.engine.model, ids, targets, mask).to(HOST).tolist()
        return [None, *logp]

    def close(self) -> None:
        """Close the engine, and free the model when this sampler loaded it (once)."""
        if "engine" not in vars(self):
            return
        self.engine.close()
        del self.engine
        if self.owns_model:
            del self.model
        release_device_memory()
