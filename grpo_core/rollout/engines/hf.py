"""The transformers rollout engine: the trainer's own model samples with ``generate``.

All prompts of a step × G are sampled in one batched ``generate`` call (prompts left-padded). The log-probs the
trainer computes later come from the same weights and the same kernels, so no importance-sampling correction is
needed and ``sync`` costs nothing.
"""

from __future__ import annotations

from typing import Any

import torch

from grpo_core.models.prefix_cache import prefill_cache
from grpo_core.rollout.batch import Rollout, completion_mask, eos_ids, left_padded
from grpo_core.rollout.engines.base import Sampling


class TransformersEngine:
    name = "transformers"

    def __init__(self, model: Any, tokenizer: Any, autocast_dtype: torch.dtype | None = None) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.autocast_dtype = autocast_dtype

    def generate(self, prompts: list[str], sampling: Sampling) -> Rollout:
        return sample(self.model, self.tokenizer, prompts, sampling, autocast_dtype=self.autocast_dtype)

    @torch.no_grad()
    def continue_turns(
        self, sequences: list[list[int]], sampling: Sampling, rows: list[int]
    ) -> list[tuple[list[int], list[float] | None]]:
        """One ``generate`` call over the left-padded sequences; no log-probs (the trainer's are these)."""
        stop = eos_ids(self.model, self.tokenizer)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else stop[0]
        device = next(self.model.parameters()).device
        ids, mask = left_padded(sequences, pad, device)
        gen = torch.Generator(device="cpu").manual_seed(sampling.seed + rows[0])
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen, device=gen.device)))
            with torch.autocast(device.type, dtype=self.autocast_dtype, enabled=self.autocast_dtype is not None):
                drawn = {"do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": 0}
                out = self.model.generate(
                    input_ids=ids,
                    attention_mask=mask,
                    **(drawn if sampling.temperature > 0 else {"do_sample": False}),
                    max_new_tokens=sampling.max_new_tokens,
                    eos_token_id=stop,
                    pad_token_id=pad,
                )
        new = out[:, ids.shape[1] :]
        cmask, _ = completion_mask(new, stop)
        return [(row[: int(m.sum())], None) for row, m in zip(new.tolist(), cmask, strict=True)]

    def sync(self, model: Any, step: int) -> None:
        """Nothing to do: the engine samples with the trainer's model itself."""

    def suspend(self) -> None:
        """Nothing to free: ``generate`` holds its cache only while it runs."""

    def close(self) -> None:
        pass


def _shared_prefill(model: Any, unique: dict[str, torch.Tensor], group_size: int) -> Any:
    """KV cache of every prompt token but the last, computed once per distinct prompt and repeated G times.

    ``generate`` then feeds only the last prompt token and decodes as usual; positions follow the left padding
    exactly as ``generate`` computes them. None (plain path) when there is nothing to share or the model's cache
    type cannot be repeated along the batch.
    """
    from transformers import DynamicCache

    ids, mask = unique["input_ids"], unique["attention_mask"]
    if group_size == 1 or ids.shape[1] < 2:
        return None
    try:
        cache = DynamicCache(config=model.config)
        prefill_cache(model, ids, mask, cache)  # (logits of one position only: the prefix needs none)
        cache.batch_repeat_interleave(group_size)
    except (TypeError, ValueError, AttributeError, NotImplementedError):
        return None
    return cache


# no_grad, not inference_mode: the sampled ids are later a gather index inside autograd, which inference
# tensors may not be.
@torch.no_grad()
def sample(
    model: Any,  # a transformers causal LM, or its peft wrapper
    tokenizer: Any,
    prompts: list[str],
    sampling: Sampling,
    *,
    autocast_dtype: torch.dtype | None = None,
    share_prefill: bool = True,
) -> Rollout:
    """Sample ``group_size`` completions for each prompt in one batched generate call (greedy at temperature 0).

    With ``share_prefill`` each distinct prompt is run through the model once and its KV cache repeated G times
    (models whose cache cannot be repeated fall back to the plain path), instead of G identical prefills.
    """
    stop = eos_ids(model, tokenizer)
    if tokenizer.pad_token is None:  # many base models have none; masks never depend on it (see rollout)
        tokenizer.pad_token = tokenizer.convert_ids_to_tokens(stop[0])
    tokenizer.padding_side = "left"
    device = next(model.parameters()).device
    unique = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    unique = {k: v.to(device) for k, v in unique.items()}
    enc = {k: v.repeat_interleave(sampling.group_size, dim=0) for k, v in unique.items()}
    # generate() draws from the global RNG, in batch order: fork it, seeded by (seed, first_row), so sampling is a
    # function of those and the caller's RNG stream is untouched. Unlike the merged engine's draws, a row's
    # completion here depends on the batch it is drawn in (generate's multinomial), so a data-parallel step with
    # this engine samples other (equally distributed) completions than one process would.
    gen = torch.Generator(device="cpu").manual_seed(sampling.seed + sampling.first_row)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen, device=gen.device)))
        with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            drawn = {"do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": 0}
            cache = _shared_prefill(model, unique, sampling.group_size) if share_prefill else None
            out = model.generate(
                **enc,
                past_key_values=cache,
                **(drawn if sampling.temperature > 0 else {"do_sample": False}),
                max_new_tokens=sampling.max_new_tokens,
                eos_token_id=stop,
                pad_token_id=tokenizer.pad_token_id,
            )
    prompt_len = enc["input_ids"].shape[1]
    completion_ids = out[:, prompt_len:]
    mask, truncated = completion_mask(completion_ids, stop)
    texts = [
        tokenizer.decode(ids[: int(m.sum())], skip_special_tokens=True)
        for ids, m in zip(completion_ids, mask, strict=True)
    ]
    return Rollout(
        prompt_ids=enc["input_ids"],
        prompt_mask=enc["attention_mask"],
        completion_ids=completion_ids,
        completion_mask=mask,
        truncated=truncated,
        texts=texts,
    )
