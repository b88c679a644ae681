"""Training runs on one shared resident base (grpo_core.training_api.shared): runs that take turns in one slot, their
calls interleaved (gradients left pending while another run computes, a load, a save, a live sampler), end bit for
bit where each run alone ends (fp32, the tiny random model); one base is loaded for them, and freed with the last."""

from __future__ import annotations

from pathlib import Path

import torch

from grpo_core.training_api.model import TrainingModel
from grpo_core.training_api.sampling import Sampler
from grpo_core.training_api.shared import SharedBases
from grpo_core.training_api.spec import Datum

ADAM = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.01, "grad_clip_norm": 1.0}


def sft(tokens: list[int]) -> Datum:
    return Datum(tokens[:-1], {"target_tokens": tokens[1:], "weights": [0.0] + [1.0] * (len(tokens) - 2)})


A_DATA = [sft([1, 12, 13, 14, 15, 16]), sft([1, 20, 21, 22])]
B_DATA = [sft([1, 30, 31, 32, 33, 34, 35]), sft([1, 5, 6])]
PROMPT = [1, 12, 13]


def adapter(m: TrainingModel) -> list[torch.Tensor]:
    m.hold()
    return [p.detach().clone() for p in m.params]


def script(a: TrainingModel, b: TrainingModel, tmp: Path) -> dict[str, object]:
    """Both runs' calls, interleaved: each forward_backward's gradient waits while the other run computes."""
    seen: dict[str, object] = {}
    a.forward_backward(A_DATA[:1], "cross_entropy", {})
    b.forward_backward(B_DATA, "cross_entropy", {})
    a.forward_backward(A_DATA[1:], "cross_entropy", {})  # added to what a's first call left
    seen["b_step"] = b.optim_step(**ADAM)
    seen["a_step"] = a.optim_step(**ADAM)
    sampler_a = Sampler.for_training(a)
    b.forward_backward(B_DATA, "cross_entropy", {})
    seen["a_sample"] = sampler_a.sample(PROMPT, 3, 6, 1.0, seed=7, prompt_logprobs=True)
    b.optim_step(**ADAM)
    b.save_state(tmp / "b")
    a.forward_backward(A_DATA, "cross_entropy", {})
    a.optim_step(**ADAM)
    b.load_state(tmp / "b", optimizer=True)  # b as it was saved
    seen["a_sample_after"] = sampler_a.sample(PROMPT, 3, 6, 1.0, seed=7)
    seen["b_logprobs"] = b.forward_backward(B_DATA, "cross_entropy", {}, backward=False).logprobs
    seen["a_logprobs"] = a.forward_backward(A_DATA, "cross_entropy", {}, backward=False).logprobs
    sampler_a.close()
    return seen


def test_interleaved_runs_on_one_base_end_as_each_run_alone(tiny_model_dir: Path, tmp_path: Path) -> None:
    shared = SharedBases()
    a = TrainingModel(tiny_model_dir, rank=4, seed=1, shared=shared)
    b = TrainingModel(tiny_model_dir, rank=4, seed=2, shared=shared)
    assert a.model is b.model and len(shared) == 1  # one base for both
    pooled = script(a, b, tmp_path / "pooled")
    pooled_a, pooled_b = adapter(a), adapter(b)

    alone_a = TrainingModel(tiny_model_dir, rank=4, seed=1)
    alone_b = TrainingModel(tiny_model_dir, rank=4, seed=2)
    assert alone_a.model is not alone_b.model
    alone = script(alone_a, alone_b, tmp_path / "alone")
    assert pooled == alone  # every metric, sample, logprob: bit for bit
    for x, y in zip([*pooled_a, *pooled_b], [*adapter(alone_a), *adapter(alone_b)], strict=True):
        assert torch.equal(x, y)
    assert not all(torch.equal(x, y) for x, y in zip(pooled_a, pooled_b, strict=True))  # two adapters, not one

    a.close()
    assert len(shared) == 1 and b.model is not None  # b keeps the base
    b.forward_backward(B_DATA, "cross_entropy", {})
    b.close()
    assert len(shared) == 0  # the last run freed it


def test_runs_of_another_shape_get_their_own_base(tiny_model_dir: Path) -> None:
    shared = SharedBases()
    a = TrainingModel(tiny_model_dir, rank=4, seed=1, shared=shared)
    b = TrainingModel(tiny_model_dir, rank=8, seed=1, shared=shared)
    c = TrainingModel(tiny_model_dir, rank=4, seed=1, shared=shared, train_mlp=False)
    assert len(shared) == 3 and a.model is not b.model and a.model is not c.model
    for m in (a, b, c):
        m.close()
    assert len(shared) == 0
