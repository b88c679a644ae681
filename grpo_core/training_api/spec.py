"""What a forward_backward or sample request may hold, checked before it reaches a model; no torch here.

The API imports this module to refuse a bad request when it arrives (with the field to fix), instead of queueing
it for a worker that would fail on it later; the worker's model checks again with the same functions.

A ``Datum`` is one sequence, next-token aligned as in Tinker: position i of ``tokens`` (the model input) predicts
``inputs["target_tokens"][i]``, and every input holds one value per position. The losses and their inputs follow
the Tinker docs ("Loss Functions", tinker-docs.thinkingmachines.ai); grpo_core.training_api.losses has the formulas:

    loss                 inputs (one value per token)                        config (default)
    cross_entropy        target_tokens:int64, weights:float32                —
    importance_sampling  target_tokens, logprobs, advantages [, weights]     —
    ppo                  target_tokens, logprobs, advantages [, weights]     clip_low_threshold (0.8)
                         [, clip_low_threshold, clip_high_threshold]         clip_high_threshold (1.2)
    cispo                as ppo                                              clip_low_threshold (0.8)
                                                                             clip_high_threshold (1.2)
    gspo                 as ppo [, sequence_ratio_mask]                      clip_low_threshold (0.9997)
                                                                             clip_high_threshold (1.0004)

``logprobs`` are the sampler's log-probs of the target tokens (the policy q that drew them); ``weights`` is
optional for the RL losses and then 1 on every token (prompt tokens carry no loss there because their advantage
is 0, as the Tinker cookbook builds its data); a per-token clip threshold, when given, overrides the config's on
that datum. ``sequence_ratio_mask`` (gspo) marks the tokens whose log-ratios make a datum's sequence ratio; left
out, they are the tokens that carry loss (w ≠ 0 and A ≠ 0). gspo's default thresholds are the GSPO paper's
(ε_low = 3e-4, ε_high = 4e-4: a sequence ratio is a geometric mean, so its range is narrow). Unknown losses,
inputs and config keys are refused, never ignored: a misspelt ``advantage`` would otherwise train on nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from grpo_core.errors import UserError

Dtype = Literal["int64", "float32"]
MAX_SAMPLES = 64  # num_samples of one sample request


class BatchError(UserError, ValueError):
    """A request the user must fix: ``param`` is the field's path in the request (``data[3].loss_fn_inputs.
    advantages``), ``message`` says what is wrong with it and what is expected."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(f"{param}: {message}")
        self.param, self.message = param, message


@dataclass(frozen=True)
class InputSpec:
    """One per-token input of a loss. ``default``: the value of an optional input on a datum that leaves it out
    (None: the loss config's value of the same name)."""

    dtype: Dtype
    required: bool = True
    default: float | None = None  # NaN: "not given", which no request can send (inputs must be finite)


@dataclass(frozen=True)
class LossSpec:
    """A loss's inputs and its config keys with their defaults."""

    name: str
    inputs: Mapping[str, InputSpec]
    config: Mapping[str, float] = field(default_factory=dict)

    def resolved_config(self, given: Mapping[str, float]) -> dict[str, float]:
        """The config with every key this loss takes: ``given``'s values over the defaults."""
        return {key: float(given.get(key, default)) for key, default in self.config.items()}

    def fill(self, name: str, config: Mapping[str, float]) -> float:
        """The per-token value of the optional input ``name`` on a datum that leaves it out."""
        spec = self.inputs[name]
        return spec.default if spec.default is not None else self.resolved_config(config)[name]


_TARGETS = InputSpec("int64")
_RL_INPUTS = {
    "target_tokens": _TARGETS,
    "logprobs": InputSpec("float32"),
    "advantages": InputSpec("float32"),
    "weights": InputSpec("float32", required=False, default=1.0),
}
_CLIPPED_INPUTS = _RL_INPUTS | {
    "clip_low_threshold": InputSpec("float32", required=False),
    "clip_high_threshold": InputSpec("float32", required=False),
}
# The GSPO paper's ranges (Zheng et al., 2025, §5.1: 3e-4 and 4e-4) around a ratio of 1.
GSPO_CLIP = {"clip_low_threshold": 1 - 3e-4, "clip_high_threshold": 1 + 4e-4}
LOSSES: dict[str, LossSpec] = {
    "cross_entropy": LossSpec("cross_entropy", {"target_tokens": _TARGETS, "weights": InputSpec("float32")}),
    "importance_sampling": LossSpec("importance_sampling", _RL_INPUTS),
    "ppo": LossSpec("ppo", _CLIPPED_INPUTS, {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}),
    "cispo": LossSpec("cispo", _CLIPPED_INPUTS, {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}),
    "gspo": LossSpec(
        "gspo",
        _CLIPPED_INPUTS | {"sequence_ratio_mask": InputSpec("float32", required=False, default=math.nan)},
        GSPO_CLIP,
    ),
}
# The other names the tinker SDK's LossFnType knows: refused with the list of those this server computes.
UNSUPPORTED_LOSSES = ("dro", "stable_reinforce", "custom")


def _supported() -> str:
    return ", ".join(LOSSES)


def loss_spec(loss_fn: str) -> LossSpec:
    """The spec of ``loss_fn``, or a ``BatchError`` on ``loss_fn`` naming the supported losses."""
    if loss_fn in LOSSES:
        return LOSSES[loss_fn]
    if loss_fn in UNSUPPORTED_LOSSES:
        raise BatchError("loss_fn", f"{loss_fn!r} is not supported by this server; use one of {_supported()}")
    raise BatchError("loss_fn", f"unknown loss {loss_fn!r}; use one of {_supported()}")


@dataclass(frozen=True)
class Datum:
    """One training sequence: ``tokens`` (the model input) and ``inputs`` (per-token loss inputs, each as long as
    ``tokens``; int64 inputs hold ints). ``inputs`` is a Mapping of Sequences so a caller's ``list[int]`` fits."""

    tokens: list[int]
    inputs: Mapping[str, Sequence[float]]


def _first_bad(values: Sequence[float], ok: Callable[[float], bool]) -> int:
    """Index of the first value that fails ``ok`` (called once a check over all of them failed)."""
    return next(i for i, v in enumerate(values) if not ok(v))


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_finite(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _check_ids(param: str, values: Sequence[float], vocab_size: int | None, what: str) -> None:
    """Every value an int token id within the vocabulary."""
    if not all(map(_is_int, values)):
        i = _first_bad(values, _is_int)
        raise BatchError(param, f"value {values[i]!r} at position {i} is not an integer {what}")
    if values and (min(values) < 0 or (vocab_size is not None and max(values) >= vocab_size)):
        limit = f"0..{vocab_size - 1}" if vocab_size is not None else "≥ 0"
        i = _first_bad(values, lambda v: v >= 0 and (vocab_size is None or v < vocab_size))
        raise BatchError(param, f"{what} {values[i]} at position {i} is outside the vocabulary ({limit})")


def _check_floats(param: str, values: Sequence[float]) -> None:
    if not all(map(_is_finite, values)):
        i = _first_bad(values, _is_finite)
        raise BatchError(param, f"value {values[i]!r} at position {i} is not a finite number")


def _check_config(spec: LossSpec, config: Mapping[str, float]) -> None:
    for key, value in config.items():
        if key not in spec.config:
            takes = f"it takes {', '.join(spec.config)}" if spec.config else "it takes none"
            raise BatchError(f"loss_fn_config.{key}", f"{spec.name} has no config key {key!r} ({takes})")
        if not _is_finite(value):
            raise BatchError(f"loss_fn_config.{key}", f"{value!r} is not a finite number")
    if "clip_low_threshold" in spec.config:
        cfg = spec.resolved_config(config)
        if cfg["clip_low_threshold"] > cfg["clip_high_threshold"]:
            raise BatchError(
                "loss_fn_config.clip_low_threshold",
                f"{cfg['clip_low_threshold']} is above clip_high_threshold {cfg['clip_high_threshold']}",
            )


def check_datum(spec: LossSpec, i: int, datum: Datum, vocab_size: int | None, max_tokens: int | None) -> None:
    """``data[i]`` against ``spec`` (``check_batch``)."""
    where = f"data[{i}]"
    n = len(datum.tokens)
    if n == 0:
        raise BatchError(f"{where}.model_input", "empty: a datum needs at least one token")
    if max_tokens is not None and n > max_tokens:
        raise BatchError(f"{where}.model_input", f"{n} tokens, more than the {max_tokens} this model takes")
    _check_ids(f"{where}.model_input", datum.tokens, vocab_size, "token id")
    for name in datum.inputs:
        if name not in spec.inputs:
            takes = ", ".join(spec.inputs)
            message = f"{spec.name} takes no input {name!r} (it takes {takes})"
            raise BatchError(f"{where}.loss_fn_inputs.{name}", message)
    for name, input_spec in spec.inputs.items():
        param = f"{where}.loss_fn_inputs.{name}"
        if name not in datum.inputs:
            if input_spec.required:
                needed = ", ".join(k for k, s in spec.inputs.items() if s.required)
                raise BatchError(param, f"missing: {spec.name} needs {needed}")
            continue
        values = datum.inputs[name]
        if len(values) != n:
            raise BatchError(
                param,
                f"{len(values)} values for {n} tokens of model_input: every input has one value per token "
                "(position i holds what goes with the prediction of target_tokens[i])",
            )
        if input_spec.dtype == "int64":
            _check_ids(param, values, vocab_size, "token id")
        else:
            _check_floats(param, values)
    low, high = datum.inputs.get("clip_low_threshold"), datum.inputs.get("clip_high_threshold")
    if low is not None and high is not None:
        k = next((k for k, (lo, hi) in enumerate(zip(low, high, strict=True)) if lo > hi), None)
        if k is not None:
            raise BatchError(f"{where}.loss_fn_inputs.clip_low_threshold", f"above clip_high_threshold at position {k}")


def check_batch(
    loss_fn: str, data: Sequence[Datum], config: Mapping[str, float], vocab_size: int | None, max_tokens: int | None
) -> None:
    """Raise ``BatchError`` for the first thing wrong with a forward_backward request: an unknown or unsupported
    loss, an empty batch, an unknown config key or a non-finite config value, and per datum an empty or overlong
    ``model_input`` (over ``max_tokens``), a missing or unknown input, an input whose length is not the
    sequence's, a token id outside ``vocab_size``, a non-finite float. None of the limits when they are None."""
    spec = loss_spec(loss_fn)
    _check_config(spec, config)
    if not data:
        raise BatchError("data", "no datums: send at least one")
    for i, datum in enumerate(data):
        check_datum(spec, i, datum, vocab_size, max_tokens)


Stop = str | Sequence[str] | Sequence[int] | None


def stop_lists(stop: Stop) -> tuple[list[str], list[int]]:
    """(stop strings, stop token ids) of a sampling request's ``stop`` (a string, a list of strings or a list of
    token ids; never a mix)."""
    if stop is None:
        return [], []
    if isinstance(stop, str):
        return [stop], []
    values: list[object] = list(stop)
    strings = [s for s in values if isinstance(s, str)]
    ids = [s for s in values if isinstance(s, int) and not isinstance(s, bool)]
    if len(strings) == len(values) or len(ids) == len(values):
        return strings, ids
    raise BatchError("sampling_params.stop", "a string, a list of strings or a list of token ids, not a mix")


def check_sampling(
    max_tokens: int | None,
    temperature: float,
    top_p: float,
    top_k: int,
    num_samples: int,
    *,
    prompt: Sequence[int] | None = None,
    stop: Stop = None,
    vocab_size: int | None = None,
    max_context: int | None = None,
) -> None:
    """Raise ``BatchError`` for the first thing wrong with a sample request. The engines sample with temperature
    (0: greedy) within a top-p nucleus only, so a top-k other than -1 (none) is refused rather than ignored.
    ``max_context``: the most positions the model takes, prompt and sampled tokens together."""
    if max_tokens is None or not _is_int(max_tokens) or max_tokens < 1:
        raise BatchError("sampling_params.max_tokens", f"{max_tokens!r}: set the number of tokens to sample, ≥ 1")
    if not _is_finite(temperature) or temperature < 0:
        raise BatchError("sampling_params.temperature", f"{temperature!r}: a number ≥ 0 (0 is greedy)")
    if not _is_finite(top_p) or not 0 < top_p <= 1:
        raise BatchError("sampling_params.top_p", f"{top_p!r}: a number in (0, 1]")
    if top_k != -1:
        raise BatchError("sampling_params.top_k", f"{top_k!r}: top-k sampling is not supported; use -1 and top_p")
    if not _is_int(num_samples) or not 1 <= num_samples <= MAX_SAMPLES:
        raise BatchError("num_samples", f"{num_samples!r}: between 1 and {MAX_SAMPLES}")
    strings, ids = stop_lists(stop)
    if any(not s for s in strings):
        raise BatchError("sampling_params.stop", "an empty stop string would stop before the first token")
    _check_ids("sampling_params.stop", ids, vocab_size, "token id")
    if prompt is not None:
        if not prompt:
            raise BatchError("prompt", "empty: the prompt needs at least one token")
        _check_ids("prompt", prompt, vocab_size, "token id")
        if max_context is not None and len(prompt) + max_tokens > max_context:
            raise BatchError(
                "sampling_params.max_tokens",
                f"{len(prompt)} prompt tokens + {max_tokens} is more than the {max_context} positions of this model",
            )


def check_adam(lr: float, beta1: float, beta2: float, eps: float, weight_decay: float, grad_clip_norm: float) -> None:
    """Raise ``BatchError`` for AdamW hyperparameters an optimizer step cannot use (``adam_params.<name>``):
    every value finite, lr, eps, weight_decay and grad_clip_norm ≥ 0 (grad_clip_norm 0: no clipping), betas in
    [0, 1)."""
    values = {
        "learning_rate": lr,
        "beta1": beta1,
        "beta2": beta2,
        "eps": eps,
        "weight_decay": weight_decay,
        "grad_clip_norm": grad_clip_norm,
    }
    for name, value in values.items():
        if not _is_finite(value) or value < 0:
            raise BatchError(f"adam_params.{name}", f"{value!r}: a finite number ≥ 0")
    for name in ("beta1", "beta2"):
        if values[name] >= 1:
            raise BatchError(f"adam_params.{name}", f"{values[name]!r}: below 1")
