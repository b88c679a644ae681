"""A lean batched sampling loop: the prompt prefill once per distinct prompt, then one forward per new token.

Why not ``model.generate``: on a small model the per-token work outside the forward pass (generate's input
preparation, processors, stopping criteria) is a sizeable share of a step, and the loop here also records the
log-prob of every sampled token under the distribution that drew it (after temperature and top-p) as it goes,
with one (B, V) row of scores alive at a time — what the truncated importance-sampling correction needs when the
sampler's weights are not bit-identical to the trainer's (grpo_core.rollout.engines.merged).

Sampling draws counter-based uniforms keyed by (seed, the row's step-wide number, token)
(grpo_core.rollout.engines.noise), so a rollout is a function of (weights, prompt, seed, row), the same in any batch or
on any rank, and the global RNG is untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

import torch
from torch import Tensor

from grpo_core.models.prefix_cache import prefill_cache
from grpo_core.rollout.batch import Rollout, completion_mask, eos_ids, left_padded
from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.engines.graphs import StaticDecoder
from grpo_core.rollout.engines.noise import row_uniforms


class Steps(Protocol):
    """A rollout's decode steps: ``logits()`` predicts the position after the tokens fed so far ((n, V) fp32);
    ``feed`` appends the next (n,) tokens. Eager (``_EagerSteps``) or on static buffers (graphs.DecodeRun).
    ``check_every``: how many tokens apart the loop asks whether every row has finished (each ask waits for the
    device)."""

    check_every: int

    def logits(self) -> Tensor: ...

    def feed(self, tokens: Tensor) -> None: ...


def _preallocated_layer_class() -> type:
    from transformers.cache_utils import DynamicLayer

    class PreallocatedLayer(DynamicLayer):  # type: ignore[no-untyped-call]  # transformers' cache: untyped
        """A DynamicLayer whose keys/values live in a buffer sized for the whole rollout, written in place.

        DynamicLayer concatenates the whole cache on every token (O(length) copying per step, per layer); here a
        token costs a write of its own keys/values and the attention reads a view of the filled part.
        """

        def __init__(self, capacity: int) -> None:
            cast("Callable[[], None]", super().__init__)()  # DynamicLayer.__init__ is unannotated in transformers
            self.capacity, self.length = capacity, 0

        def update(self, key_states: Tensor, value_states: Tensor, *args: Any, **kwargs: Any) -> tuple[Tensor, Tensor]:
            if not self.is_initialized:
                self.dtype, self.device = key_states.dtype, key_states.device
                b, h, _, dk = key_states.shape
                self.k_buf = key_states.new_empty((b, h, self.capacity, dk))
                self.v_buf = value_states.new_empty((b, value_states.shape[1], self.capacity, value_states.shape[3]))
                self.is_initialized = True
            n = key_states.shape[-2]
            self.k_buf[:, :, self.length : self.length + n] = key_states
            self.v_buf[:, :, self.length : self.length + n] = value_states
            self.length += n
            self.keys, self.values = self.k_buf[:, :, : self.length], self.v_buf[:, :, : self.length]
            return self.keys, self.values

        def get_seq_length(self) -> int:
            return self.length

        def batch_repeat_interleave(self, repeats: int) -> None:
            if self.length:
                self.k_buf = self.k_buf.repeat_interleave(repeats, dim=0)
                self.v_buf = self.v_buf.repeat_interleave(repeats, dim=0)
                self.keys, self.values = self.k_buf[:, :, : self.length], self.v_buf[:, :, : self.length]

    return PreallocatedLayer


def _new_cache(model: Any, capacity: int) -> Any:
    """A DynamicCache for ``model``; full-attention layers preallocated to ``capacity`` tokens (sliding-window and
    other special layers keep their own classes)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    cache = DynamicCache(config=model.config)
    layer_cls = _preallocated_layer_class()
    cache.layers = [layer_cls(capacity) if type(x) is DynamicLayer else x for x in cache.layers]
    return cache


def _prefill(model: Any, ids: Tensor, mask: Tensor, group_size: int, capacity: int) -> Any:
    """KV cache of every prompt token but the last, one row per distinct prompt, repeated ``group_size`` times."""
    cache = _new_cache(model, capacity)
    if ids.shape[1] > 1:
        prefill_cache(model, ids, mask, cache)
        if group_size > 1:
            cache.batch_repeat_interleave(group_size)
    return cache


class _EagerSteps:
    """Decode steps through transformers' forward on a growing cache: the fed tokens' attention mask grows by a
    column per token (None when no row is padded), positions count from each row's last prompt token."""

    check_every = 1  # an eager step is long next to the wait for its result

    def __init__(self, model: Any, cache: Any, ids: Tensor, mask: Tensor, padding_free: bool) -> None:
        self.model, self.cache, self.padding_free = model, cache, padding_free
        self.position = (mask.sum(dim=1, keepdim=True) - 1).clamp(min=0)  # of the last prompt token
        self.step_input, self.attn = ids[:, -1:], mask

    def logits(self) -> Tensor:
        out = self.model(
            input_ids=self.step_input,
            attention_mask=None if self.padding_free else self.attn,
            position_ids=self.position,
            past_key_values=self.cache,
            use_cache=True,
            logits_to_keep=1,
        )
        logits: Tensor = out.logits[:, -1, :].float()
        return logits

    def feed(self, tokens: Tensor) -> None:
        self.step_input = tokens.unsqueeze(1)
        self.attn = torch.cat([self.attn, self.attn.new_ones((self.attn.shape[0], 1))], dim=1)
        self.position = self.position + 1


def _steps(
    model: Any,
    ids: Tensor,
    mask: Tensor,
    group_size: int,
    max_new_tokens: int,
    padding_free: bool,
    static: StaticDecoder | None,
) -> tuple[Steps, Tensor, Tensor]:
    """The decode steps of a rollout of the distinct prompts ``ids``/``mask`` × ``group_size`` (on the engine's
    static buffers when it has them, grpo_core.rollout.engines.graphs; else eagerly), and the rollout's rows: each
    prompt's ids and mask repeated ``group_size`` times."""
    rows, rows_mask = ids.repeat_interleave(group_size, dim=0), mask.repeat_interleave(group_size, dim=0)
    if static is not None:  # each prompt's prefix once: start() copies it into every row of its group
        prefix = _prefill(model, ids, mask, 1, capacity=ids.shape[1])
        return static.start(prefix, rows, rows_mask, max_new_tokens, group_size), rows, rows_mask
    cache = _prefill(model, ids, mask, group_size, capacity=ids.shape[1] + max_new_tokens)
    return _EagerSteps(model, cache, rows, rows_mask, padding_free), rows, rows_mask


def _step_shapes(
    tokenizer: Any, ids: Tensor, mask: Tensor, step_prompts: tuple[str, ...]
) -> tuple[Tensor, Tensor, bool]:
    """A share's ``ids``/``mask`` left-padded to the widest prompt of the step, and whether the step as a whole is
    padding-free (every prompt of one length), as one process sampling the whole step would compute them."""
    lengths = [len(x) for x in tokenizer(list(step_prompts), add_special_tokens=False)["input_ids"]]
    width = max(lengths)
    if width > ids.shape[1]:
        pad = width - ids.shape[1]
        ids = torch.cat([ids.new_full((ids.shape[0], pad), tokenizer.pad_token_id), ids], dim=1)
        mask = torch.cat([mask.new_zeros((mask.shape[0], pad)), mask], dim=1)
    return ids, mask, len(set(lengths)) == 1


def _draw(logp: Tensor, uniforms: Tensor) -> Tensor:
    """One token per row from exp(``logp``) by inverting the CDF with the row's uniform draw (``uniforms`` (B, 1)).

    torch.multinomial draws V exponentials per row; this is one cumulative sum. The
    CDF is in float64 so the last bins keep their mass on large vocabularies.
    """
    cdf = logp.double().exp().cumsum(dim=-1)
    u = uniforms.to(cdf.device) * cdf[:, -1:]
    return torch.searchsorted(cdf, u).squeeze(1).clamp(max=logp.shape[1] - 1)


def _nucleus(logp: Tensor, top_p: float) -> Tensor:
    """``logp`` (B, V) restricted to the smallest set of tokens whose mass reaches ``top_p``, renormalised."""
    sorted_lp, order = logp.sort(dim=-1, descending=True)
    mass_before = sorted_lp.exp().cumsum(dim=-1) - sorted_lp.exp()
    drop_sorted = mass_before >= top_p  # the top token is always kept (mass before it is 0)
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return torch.log_softmax(logp.masked_fill(drop, float("-inf")), dim=-1)


def decode(
    model: Any,
    tokenizer: Any,
    prompts: list[str],
    sampling: Sampling,
    *,
    stop_ids: list[int] | None = None,
    static: StaticDecoder | None = None,
) -> Rollout:
    """``group_size`` completions per prompt (rows grouped by prompt), greedy at temperature 0.

    ``Rollout.sampling_logp`` holds each sampled token's log-prob under the sampling distribution (softmax of
    logits / T, restricted to the top-p nucleus); None when greedy (no distribution drew the tokens).
    ``static``: run the decode steps on these static buffers (CUDA graphs on a GPU; grpo_core.rollout.engines.graphs)
    instead of transformers' growing cache.

    The loop runs under ``torch.inference_mode`` (no autograd bookkeeping per op); the
    returned tensors are cloned outside it, because the trainer later uses the ids inside autograd, which
    inference tensors may not enter.
    """
    with torch.inference_mode():
        ro = _decode(model, tokenizer, prompts, sampling, stop_ids, static)
    return _cloned(ro)


def _decode(
    model: Any,
    tokenizer: Any,
    prompts: list[str],
    sampling: Sampling,
    stop_ids: list[int] | None,
    static: StaticDecoder | None,
) -> Rollout:
    stop = stop_ids or eos_ids(model, tokenizer)
    ids, mask = _encode(model, tokenizer, prompts, stop)
    # Prompts of one length (no left padding): no attention mask at all, so the model builds none per token;
    # tokens after a row's EOS are masked out of the loss later and, attention being causal, change nothing.
    padding_free = bool(mask.all())
    if sampling.step_prompts:  # a rank's share: the whole step's shapes (Sampling.step_prompts says why)
        ids, mask, padding_free = _step_shapes(tokenizer, ids, mask, sampling.step_prompts)
    steps, ids, mask = _steps(model, ids, mask, sampling.group_size, sampling.max_new_tokens, padding_free, static)
    rows = torch.arange(sampling.first_row, sampling.first_row + ids.shape[0], device=ids.device)
    completion_ids, logps = _sample_tokens(steps, rows, sampling, stop)
    return _rollout(tokenizer, ids, mask, completion_ids, logps, stop)


def _encode(model: Any, tokenizer: Any, prompts: list[str], stop: list[int]) -> tuple[Tensor, Tensor]:
    """``prompts`` tokenized and left-padded on the model's device: (ids, mask)."""
    if tokenizer.pad_token is None:  # masks never depend on the pad id (grpo_core.rollout.batch)
        tokenizer.pad_token = tokenizer.convert_ids_to_tokens(stop[0])
    tokenizer.padding_side = "left"
    device = next(model.parameters()).device
    enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    return enc["input_ids"].to(device), enc["attention_mask"].to(device)


def _rollout(
    tokenizer: Any, ids: Tensor, mask: Tensor, completion_ids: Tensor, logps: Tensor | None, stop: list[int]
) -> Rollout:
    """The rollout of rows ``ids``/``mask`` that sampled ``completion_ids`` (with ``logps``), on the host."""
    cmask, truncated = completion_mask(completion_ids, stop)
    texts = [
        tokenizer.decode(row[: int(m.sum())], skip_special_tokens=True)
        for row, m in zip(completion_ids.tolist(), cmask, strict=True)
    ]
    sampling_logp = logps.cpu() * cmask.cpu() if logps is not None else None
    return Rollout(
        prompt_ids=ids.cpu(),
        prompt_mask=mask.cpu(),
        completion_ids=completion_ids.cpu(),
        completion_mask=cmask.cpu(),
        truncated=truncated.cpu(),
        texts=texts,
        sampling_logp=sampling_logp,
    )


def decode_together(
    model: Any, tokenizer: Any, requests: Sequence[tuple[list[str], Sampling]], *, stop_ids: list[int]
) -> list[Rollout]:
    """Each request's rollout (``decode``'s), from one decode of all their rows: several pool tenants' rollouts
    (grpo_core.joint), each request's rows drawing from its own seed and row numbers. The requests share
    ``group_size``, ``max_new_tokens``, ``temperature`` and ``top_p`` (the first's are used) and sample no share of a
    step (``step_prompts``). Each rollout comes back in the shapes the request alone decodes: its prompts padded to
    its own widest, its completions as long as its own longest row.

    Rounding: the prompts are left-padded to the widest of all the requests, and the batch is larger than any
    request's alone, so a row's logits agree with the request decoded alone within rounding, not bit for bit."""
    first = requests[0][1]
    keys = [(s.group_size, s.max_new_tokens, s.temperature, s.top_p) for _, s in requests]
    if len(set(keys)) > 1 or any(s.step_prompts for _, s in requests):
        raise ValueError("requests decoded together share group_size, max_new_tokens, temperature and top_p")
    with torch.inference_mode():
        ids, mask = _encode(model, tokenizer, [p for prompts, _ in requests for p in prompts], stop_ids)
        G = first.group_size
        steps, rows_ids, rows_mask = _steps(model, ids, mask, G, first.max_new_tokens, bool(mask.all()), None)
        device = ids.device
        counts = [len(prompts) * G for prompts, _ in requests]
        rows = torch.cat(
            [
                torch.arange(s.first_row, s.first_row + n, device=device)
                for (_, s), n in zip(requests, counts, strict=True)
            ]
        )
        seeds = torch.cat(
            [torch.full((n,), s.seed & 0xFFFFFFFF, device=device) for (_, s), n in zip(requests, counts, strict=True)]
        )
        completion_ids, logps = _sample_tokens(steps, rows, first, stop_ids, seeds)
        lengths = completion_mask(completion_ids, stop_ids)[0].sum(dim=1).tolist()
        out: list[Rollout] = []
        start = 0
        for n in counts:
            end = start + n
            own_mask = rows_mask[start:end]
            width = int(own_mask.sum(dim=1).max())  # the request's widest prompt: what it pads to alone
            length = max(lengths[start:end])  # its longest row: where a decode of its rows alone stops
            lp = None if logps is None else logps[start:end, :length]
            part = _rollout(
                tokenizer,
                rows_ids[start:end, -width:],
                own_mask[:, -width:],
                completion_ids[start:end, :length],
                lp,
                stop_ids,
            )
            out.append(_cloned(part))
            start = end
    return out


def _cloned(ro: Rollout) -> Rollout:
    """``ro`` with its tensors cloned outside inference mode (the trainer uses the ids inside autograd)."""
    return Rollout(
        prompt_ids=ro.prompt_ids.clone(),
        prompt_mask=ro.prompt_mask.clone(),
        completion_ids=ro.completion_ids.clone(),
        completion_mask=ro.completion_mask.clone(),
        truncated=ro.truncated.clone(),
        texts=ro.texts,
        sampling_logp=None if ro.sampling_logp is None else ro.sampling_logp.clone(),
    )


def _sample_tokens(
    steps: Steps, rows: Tensor, sampling: Sampling, stop: list[int], seeds: Tensor | None = None
) -> tuple[Tensor, Tensor | None]:
    """(B, T) sampled ids (rows that stopped repeat their stop id) and their (B, T) sampling log-probs (None when
    greedy), from ``steps`` whose first ``logits()`` predicts the first new token; ``rows`` key each row's noise,
    with ``sampling.seed`` or, per row, ``seeds`` (B,)."""
    n, device, temperature = rows.shape[0], rows.device, sampling.temperature
    stop_t = torch.tensor(stop, device=device)
    every = steps.check_every
    tokens: list[Tensor] = []
    logps: list[Tensor] = []
    all_done: list[Tensor] = []
    done = torch.zeros(n, dtype=torch.bool, device=device)
    for t in range(sampling.max_new_tokens):
        if t:
            steps.feed(tokens[-1])
        logits = steps.logits()
        if temperature > 0:
            logp = torch.log_softmax(logits / temperature, dim=-1)
            if sampling.top_p < 1.0:
                logp = _nucleus(logp, sampling.top_p)
            token = _draw(logp, row_uniforms(sampling.seed if seeds is None else seeds, rows, t))
            logps.append(logp.gather(1, token.unsqueeze(1)).squeeze(1))
        else:
            token = logits.argmax(dim=-1)
        token = token.masked_fill(done, stop[0])  # finished rows repeat EOS: masked out, never content
        tokens.append(token)
        done = done | torch.isin(token, stop_t)
        all_done.append(done.all())
        if (t + 1) % every == 0 and bool(all_done[-1]):
            break
    length = len(tokens)
    if every > 1:  # cut at the first step after which every row had finished: what a check per token keeps
        finished = torch.stack(all_done).nonzero()
        length = int(finished[0, 0]) + 1 if finished.numel() else length
    ids = torch.stack(tokens[:length], dim=1)
    return ids, torch.stack(logps[:length], dim=1) if logps else None


def decode_continuations(
    model: Any,
    sequences: list[list[int]],
    sampling: Sampling,
    rows: list[int],
    *,
    stop_ids: list[int],
    pad_id: int,
    static: StaticDecoder | None = None,
    seeds: list[int] | None = None,
) -> list[tuple[list[int], list[float] | None]]:
    """One turn for each token sequence (a multi-turn trajectory so far, grpo_core.rollout.agent.episodes): the sampled
    ids, up to and including the first stop id, and their sampling log-probs (None when greedy). ``rows`` are the
    trajectories' step-wide numbers, which key their noise (``sampling.seed`` is the turn's, or ``seeds`` one per
    sequence: several requests decoded together, grpo_core.training_api.sampling); ``static`` as in ``decode``."""
    with torch.inference_mode():
        device = next(model.parameters()).device
        ids, mask = left_padded(sequences, pad_id, device)
        steps, _, _ = _steps(model, ids, mask, 1, sampling.max_new_tokens, bool(mask.all()), static)
        rows_t = torch.tensor(rows, dtype=torch.long, device=device)
        seeds_t = None if seeds is None else torch.tensor(seeds, dtype=torch.long, device=device)
        out, logps = _sample_tokens(steps, rows_t, sampling, stop_ids, seeds_t)
        cmask, _ = completion_mask(out, stop_ids)
        lengths = cmask.sum(dim=1).tolist()
        out_l = out.tolist()
        lp_l = logps.tolist() if logps is not None else None
    return [(out_l[i][:n], None if lp_l is None else lp_l[i][:n]) for i, n in enumerate(lengths)]
