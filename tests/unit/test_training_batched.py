"""Sample calls of several training runs on one shared base decoded together (grpo_core.training_api.batched), each
row through its own run's adapter (grpo_core.update.lora_fused.row_adapters): one decode for every call, each call's
tokens what its own run's sampler draws with the same seed, its log-probs within the stated rounding bound (fp32,
the tiny random model); which calls may join; nothing of the runs' training state touched."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from grpo_core.training_api import sampling
from grpo_core.training_api.batched import join_key, sample_together
from grpo_core.training_api.model import TrainingModel
from grpo_core.training_api.sampling import SampleCall, SampleOutput, Sampler
from grpo_core.training_api.shared import SharedBases
from grpo_core.training_api.spec import BatchError, Datum

ADAM = {"lr": 5e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.0, "grad_clip_norm": 0.0}
BOUND = 1e-5  # fp32: a sampled token's log-prob, joint decode against its run's own sampler


def trained(model_dir: Path, shared: SharedBases, seed: int, tokens: list[int]) -> TrainingModel:
    run = TrainingModel(model_dir, rank=4, seed=seed, shared=shared)
    datum = Datum(tokens[:-1], {"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)})
    for _ in range(3):  # B moves off zero: the two adapters differ
        run.forward_backward([datum], "cross_entropy", {})
        run.optim_step(**ADAM)
    return run


@pytest.fixture
def runs(tiny_model_dir: Path) -> tuple[TrainingModel, TrainingModel]:
    shared = SharedBases()
    a = trained(tiny_model_dir, shared, 1, [1, 12, 13, 14, 15, 16])
    b = trained(tiny_model_dir, shared, 2, [1, 30, 31, 32, 33])
    yield a, b
    a.close()
    b.close()


def test_calls_of_two_runs_share_one_decode_each_as_its_own_sampler_draws(
    runs: tuple[TrainingModel, TrainingModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = runs
    sa, sb = Sampler.for_training(a), Sampler.for_training(b)
    items = [
        (sa, SampleCall([1, 12, 13], 3, 8, 1.0)),
        (sb, SampleCall([1, 30, 31, 32], 2, 6, 1.0, stop=["7"])),  # stop strings: cut per call after the decode
        (sa, SampleCall([1, 5], 2, 5, 0.7, top_p=0.9)),  # another temperature: a decode of its own
        (sb, SampleCall([1, 5], 2, 5, 0.7, top_p=0.9)),
        (sa, SampleCall([1, 5], 1, 99_999, 1.0)),  # refused alone
        (sa, SampleCall([1, 20, 21], 2, 4, 1.0)),  # a's again after b's: the decode groups each run's rows
    ]
    keys = [join_key(s, c) for s, c in items]
    assert None not in keys and keys[0] == keys[1] == keys[4] == keys[5] and keys[2] == keys[3] != keys[0]
    a.hold()
    before = [p.detach().clone() for p in a.params], a.version
    b.hold()  # b's values in the slot, a's parked: the joint decode reads both where they are
    monkeypatch.setattr(sampling, "_UNSEEDED", itertools.count(100))  # the seeds unseeded() hands out
    together = sample_together([items[i] for i in (0, 1, 4, 5)]) + sample_together(items[2:4])
    assert isinstance(together[2], BatchError)
    outs = [together[0], together[1], together[3], together[4], together[5]]
    seeds = [100, 101, 102, 103, 104]  # in the order the calls came; the refused call drew none
    assert [o.decoded_with for o in outs if isinstance(o, SampleOutput)] == [3, 3, 3, 2, 2]
    for (sampler, call), seed, out in zip([items[i] for i in (0, 1, 5, 2, 3)], seeds, outs, strict=True):
        assert isinstance(out, SampleOutput)
        alone = sampler.sample(call.prompt, call.num_samples, call.max_tokens, call.temperature, call.top_p, seed,
                               call.stop)  # fmt: skip
        for x, y in zip(out.sequences, alone.sequences, strict=True):
            assert (x.tokens, x.stop_reason) == (y.tokens, y.stop_reason)
            assert x.logprobs == pytest.approx(y.logprobs, abs=BOUND, rel=0)
    # the runs' state is untouched: a's values and version, and the slot's holder
    a.hold()
    assert a.version == before[1] and all(torch.equal(p, q) for p, q in zip(a.params, before[0], strict=True))
    sa.close()
    sb.close()


def test_what_may_join(runs: tuple[TrainingModel, TrainingModel], tiny_model_dir: Path) -> None:
    a, _ = runs
    live = Sampler.for_training(a)
    assert join_key(live, SampleCall([1, 5], 1, 4, 1.0, seed=3)) is None  # seeded: exact, alone
    assert join_key(live, SampleCall([1, 5], 1, 4, 0.0)) is None  # greedy: scored by its own engine
    assert join_key(live, SampleCall([1, 5], 1, 4, 1.0, prompt_logprobs=True)) is None
    own = Sampler.load(tiny_model_dir)  # a model of its own, on no shared base
    assert join_key(own, SampleCall([1, 5], 1, 4, 1.0)) is None
    alone = TrainingModel(tiny_model_dir, rank=4, seed=0)  # a run with a base of its own
    assert join_key(Sampler.for_training(alone), SampleCall([1, 5], 1, 4, 1.0)) is None
    for s in (live, own):
        s.close()
    alone.close()
