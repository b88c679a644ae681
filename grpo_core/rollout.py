"""Sampling G completions per prompt with transformers ``generate``, and the masks that go with them.

All prompts of a step × G are sampled in one batched ``generate`` call (prompts left-padded). The completion mask
is built from the generated token ids: a token counts up to and including the first EOS (any id in the model's
generation config), never by comparing with the pad id — SmolLM2 and Qwen pad with their EOS, so a pad-based
mask would drop the real EOS and train the model never to stop. A completion with no EOS is "truncated".
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class Rollout:
    """One step's sampled sequences; B = n_prompts × G, rows grouped by prompt."""

    prompt_ids: Tensor  # (B, P) left-padded
    prompt_mask: Tensor  # (B, P) 1 on real prompt tokens
    completion_ids: Tensor  # (B, C) right-padded
    completion_mask: Tensor  # (B, C) 1 up to and including the first EOS
    truncated: Tensor  # (B,) bool: no EOS within max_completion_tokens
    texts: list[str]  # decoded completions, special tokens stripped


def eos_ids(model: torch.nn.Module, tokenizer) -> list[int]:
    """Every id that ends a completion: the generation config's EOS ids plus the tokenizer's."""
    ids: set[int] = set()
    gen = getattr(model, "generation_config", None)
    for src in (getattr(gen, "eos_token_id", None), tokenizer.eos_token_id):
        if src is None:
            continue
        ids.update(src if isinstance(src, list | tuple) else [src])
    if not ids:
        raise ValueError("the model defines no EOS token: completions could never end")
    return sorted(ids)


def completion_mask(completion_ids: Tensor, stop_ids: list[int]) -> tuple[Tensor, Tensor]:
    """(mask, truncated) for right-padded completions: 1 up to and including the first stop id."""
    is_eos = torch.isin(completion_ids, torch.tensor(stop_ids, device=completion_ids.device))
    seen_before = torch.cumsum(is_eos.int(), dim=1) - is_eos.int()  # EOS strictly before position t
    mask = (seen_before == 0).long()
    truncated = ~is_eos.any(dim=1)
    return mask, truncated


# no_grad, not inference_mode: the sampled ids are later a gather index inside autograd, which inference
# tensors may not be.
@torch.no_grad()
def sample(
    model: torch.nn.Module,
    tokenizer,
    prompts: list[str],
    *,
    group_size: int,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    seed: int,
    autocast_dtype: torch.dtype | None = None,
) -> Rollout:
    """Sample ``group_size`` completions for each prompt in one batched generate call (greedy at temperature 0)."""
    stop = eos_ids(model, tokenizer)
    expanded = [p for p in prompts for _ in range(group_size)]
    if tokenizer.pad_token is None:  # many base models have none; masks never depend on it (see module doc)
        tokenizer.pad_token = tokenizer.convert_ids_to_tokens(stop[0])
    tokenizer.padding_side = "left"
    enc = tokenizer(expanded, return_tensors="pt", padding=True, add_special_tokens=False)
    device = next(model.parameters()).device
    enc = {k: v.to(device) for k, v in enc.items()}
    gen = torch.Generator(device="cpu").manual_seed(seed)
    # generate() draws from the global RNG; fork it so sampling is a function of (seed) only and the
    # caller's RNG stream is untouched.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        with torch.autocast("cpu", dtype=autocast_dtype, enabled=autocast_dtype is not None):
            sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": 0}
            out = model.generate(
                **enc,
                **(sampling if temperature > 0 else {"do_sample": False}),
                max_new_tokens=max_new_tokens,
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
