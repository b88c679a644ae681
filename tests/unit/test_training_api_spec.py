"""grpo_core.training_api.spec: what a forward_backward, sample or optim_step request may hold, each refusal naming
the field to fix; and the module stays importable without torch (the API validates with it)."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from grpo_core.training_api.spec import (
    LOSSES,
    UNSUPPORTED_LOSSES,
    BatchError,
    Datum,
    check_adam,
    check_batch,
    check_sampling,
    stop_lists,
)

ROOT = Path(__file__).resolve().parents[2]


def rl(n: int = 3, **extra: Sequence[float]) -> Datum:
    inputs: dict[str, Sequence[float]] = {"target_tokens": [1] * n, "logprobs": [-1.0] * n, "advantages": [0.5] * n}
    return Datum([2] * n, inputs | extra)


def refusal(loss_fn: str, data: list[Datum], config: Mapping[str, float] | None = None) -> BatchError:
    with pytest.raises(BatchError) as err:
        check_batch(loss_fn, data, config or {}, vocab_size=10, max_tokens=8)
    return err.value


def test_importing_the_spec_loads_no_torch() -> None:
    code = "import sys, grpo_core.training_api.spec; print(sorted(m for m in sys.modules if m.startswith('torch')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"


def test_the_losses_and_their_inputs() -> None:
    assert set(LOSSES) == {"cross_entropy", "importance_sampling", "ppo", "cispo", "gspo"}
    assert {k for k, s in LOSSES["cross_entropy"].inputs.items() if s.required} == {"target_tokens", "weights"}
    assert {k for k, s in LOSSES["ppo"].inputs.items() if not s.required} == {
        "weights",
        "clip_low_threshold",
        "clip_high_threshold",
    }
    ppo = LOSSES["ppo"]
    assert ppo.resolved_config({}) == {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}
    assert ppo.fill("weights", {}) == 1.0
    assert ppo.fill("clip_high_threshold", {"clip_high_threshold": 1.5}) == 1.5
    assert LOSSES["cispo"].resolved_config({}) == {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}
    assert LOSSES["gspo"].resolved_config({}) == pytest.approx(
        {"clip_low_threshold": 0.9997, "clip_high_threshold": 1.0004}
    )
    assert math.isnan(LOSSES["gspo"].fill("sequence_ratio_mask", {}))  # "left out": the tokens that carry loss


def test_a_good_batch_passes() -> None:
    check_batch("cross_entropy", [Datum([1, 2], {"target_tokens": [2, 3], "weights": [0.0, 1.0]})], {}, 10, 8)
    check_batch("importance_sampling", [rl(), rl(2, weights=[1.0, 0.0])], {}, 10, 8)
    check_batch("ppo", [rl(2, clip_low_threshold=[0.5, 0.9])], {"clip_high_threshold": 1.3}, 10, None)
    check_batch("ppo", [rl()], {}, None, None)
    check_batch("cispo", [rl(2, clip_high_threshold=[1.5, 2.0])], {"clip_low_threshold": 0.0}, 10, None)
    check_batch("gspo", [rl(2, sequence_ratio_mask=[0.0, 1.0]), rl()], {"clip_high_threshold": 1.001}, 10, None)


@pytest.mark.parametrize("name", UNSUPPORTED_LOSSES)
def test_an_unsupported_loss_names_the_supported_ones(name: str) -> None:
    err = refusal(name, [rl()])
    assert err.param == "loss_fn"
    assert "not supported" in err.message and "cross_entropy, importance_sampling, ppo, cispo, gspo" in err.message


@pytest.mark.parametrize(
    ("loss_fn", "data", "config", "param", "words"),
    [
        ("sft", [rl()], {}, "loss_fn", "unknown loss 'sft'"),
        ("ppo", [], {}, "data", "no datums"),
        ("ppo", [rl()], {"clip_ratio": 0.2}, "loss_fn_config.clip_ratio", "clip_low_threshold, clip_high_threshold"),
        ("importance_sampling", [rl()], {"clip_low_threshold": 0.8}, "loss_fn_config.clip_low_threshold", "none"),
        ("ppo", [rl()], {"clip_high_threshold": math.inf}, "loss_fn_config.clip_high_threshold", "finite"),
        ("ppo", [rl()], {"clip_low_threshold": 1.5}, "loss_fn_config.clip_low_threshold", "above"),
        ("gspo", [rl()], {"clip_low_threshold": 1.001}, "loss_fn_config.clip_low_threshold", "above"),
        ("cispo", [rl()], {"beta": 0.1}, "loss_fn_config.beta", "clip_low_threshold, clip_high_threshold"),
        ("cispo", [rl(sequence_ratio_mask=[1.0] * 3)], {}, "data[0].loss_fn_inputs.sequence_ratio_mask", "no input"),
        ("gspo", [rl(2, sequence_ratio_mask=[1.0, math.nan])], {}, "data[0].loss_fn_inputs.sequence_ratio_mask", "nan"),
        ("ppo", [rl(), Datum([], {})], {}, "data[1].model_input", "empty"),
        ("ppo", [rl(9)], {}, "data[0].model_input", "more than the 8"),
        ("ppo", [Datum([1, 10], rl(2).inputs)], {}, "data[0].model_input", "token id 10 at position 1"),
        ("ppo", [Datum([1, -1], rl(2).inputs)], {}, "data[0].model_input", "outside the vocabulary (0..9)"),
        ("ppo", [rl(advantage=[1.0] * 3)], {}, "data[0].loss_fn_inputs.advantage", "takes no input 'advantage'"),
        ("cross_entropy", [Datum([1], {"target_tokens": [1]})], {}, "data[0].loss_fn_inputs.weights", "missing"),
        ("ppo", [rl(3, logprobs=[0.0] * 2)], {}, "data[0].loss_fn_inputs.logprobs", "2 values for 3 tokens"),
        ("ppo", [rl(3, target_tokens=[1, 12, 1])], {}, "data[0].loss_fn_inputs.target_tokens", "12 at position 1"),
        ("ppo", [rl(2, target_tokens=[1, 1.5])], {}, "data[0].loss_fn_inputs.target_tokens", "not an integer"),
        ("ppo", [rl(3, advantages=[0.0, math.nan, 0.0])], {}, "data[0].loss_fn_inputs.advantages", "nan at position 1"),
        ("ppo", [rl(1, weights=[math.inf])], {}, "data[0].loss_fn_inputs.weights", "not a finite number"),
        (
            "ppo",
            [rl(2, clip_low_threshold=[0.8, 1.5], clip_high_threshold=[1.2, 1.2])],
            {},
            "data[0].loss_fn_inputs.clip_low_threshold",
            "position 1",
        ),
    ],
)
def test_each_refusal_names_its_field(
    loss_fn: str, data: list[Datum], config: dict[str, float], param: str, words: str
) -> None:
    err = refusal(loss_fn, data, config)
    assert err.param == param
    assert words in err.message
    assert str(err) == f"{param}: {err.message}"


def test_a_missing_input_lists_what_the_loss_needs() -> None:
    err = refusal("importance_sampling", [Datum([1], {"target_tokens": [1], "logprobs": [0.0]})])
    assert err.param == "data[0].loss_fn_inputs.advantages"
    assert "target_tokens, logprobs, advantages" in err.message


GOOD: dict[str, Any] = {"max_tokens": 16, "temperature": 1.0, "top_p": 1.0, "top_k": -1, "num_samples": 4}


def test_good_sampling_parameters_pass() -> None:
    check_sampling(**GOOD)
    check_sampling(**GOOD | {"temperature": 0.0, "top_p": 0.5}, prompt=[1, 2], stop=["\n"], vocab_size=10)
    check_sampling(**GOOD, prompt=[1], stop=[3, 4], vocab_size=10, max_context=17)


@pytest.mark.parametrize(
    ("change", "extra", "param"),
    [
        ({"max_tokens": None}, {}, "sampling_params.max_tokens"),
        ({"max_tokens": 0}, {}, "sampling_params.max_tokens"),
        ({"temperature": -0.1}, {}, "sampling_params.temperature"),
        ({"temperature": math.nan}, {}, "sampling_params.temperature"),
        ({"top_p": 0.0}, {}, "sampling_params.top_p"),
        ({"top_p": 1.01}, {}, "sampling_params.top_p"),
        ({"top_k": 50}, {}, "sampling_params.top_k"),
        ({"num_samples": 0}, {}, "num_samples"),
        ({"num_samples": 65}, {}, "num_samples"),
        ({}, {"prompt": []}, "prompt"),
        ({}, {"prompt": [1, 10], "vocab_size": 10}, "prompt"),
        ({}, {"stop": [""]}, "sampling_params.stop"),
        ({}, {"stop": ["a", 3]}, "sampling_params.stop"),
        ({}, {"stop": [10], "vocab_size": 10}, "sampling_params.stop"),
        ({}, {"prompt": [1, 2], "max_context": 17}, "sampling_params.max_tokens"),
    ],
)
def test_each_sampling_refusal_names_its_field(change: dict[str, Any], extra: dict[str, Any], param: str) -> None:
    with pytest.raises(BatchError) as err:
        check_sampling(**GOOD | change, **extra)
    assert err.value.param == param


def test_top_k_is_refused_with_what_to_use_instead() -> None:
    with pytest.raises(BatchError, match="top-k sampling is not supported; use -1 and top_p"):
        check_sampling(**GOOD | {"top_k": 20})


def test_stop_lists() -> None:
    assert stop_lists(None) == ([], [])
    assert stop_lists("\n\n") == (["\n\n"], [])
    assert stop_lists(["a", "b"]) == (["a", "b"], [])
    assert stop_lists([3, 4]) == ([], [3, 4])
    assert stop_lists([]) == ([], [])


@pytest.mark.parametrize(
    ("args", "param"),
    [
        ((-1e-4, 0.9, 0.95, 1e-12, 0.0, 0.0), "adam_params.learning_rate"),
        ((1e-4, 1.0, 0.95, 1e-12, 0.0, 0.0), "adam_params.beta1"),
        ((1e-4, 0.9, math.nan, 1e-12, 0.0, 0.0), "adam_params.beta2"),
        ((1e-4, 0.9, 0.95, 1e-12, -0.1, 0.0), "adam_params.weight_decay"),
        ((1e-4, 0.9, 0.95, 1e-12, 0.0, -1.0), "adam_params.grad_clip_norm"),
    ],
)
def test_adam_parameters(args: tuple[float, ...], param: str) -> None:
    check_adam(1e-4, 0.9, 0.95, 1e-12, 0.0, 0.0)
    with pytest.raises(BatchError) as err:
        check_adam(*args)
    assert err.value.param == param
