"""grpo_core.training_api.sampling.Sampler on the tiny random models: what a sequence holds (stops, lengths,
log-probs), seeds, prompt log-probs, and that it samples the training model's current weights."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

from grpo_core.training_api import sampling
from grpo_core.training_api.model import TrainingModel
from grpo_core.training_api.sampling import SampleCall, Sampler, stop_string_end
from grpo_core.training_api.spec import BatchError, Datum
from tests.device_guard import ImplicitDeviceGuard
from tests.tiny_model import build_tiny_model

PROMPT = [1, 12, 13, 14]
ADAM = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.0, "grad_clip_norm": 0.0}


@pytest.fixture(scope="module")
def peaked_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model whose EOS is likely enough that about half the samples stop within 24 tokens."""
    return build_tiny_model(tmp_path_factory.mktemp("peaked"), "tiny-peaked", peaked_eos=True)


@pytest.fixture
def trained(tiny_model_dir: Path) -> TrainingModel:
    return TrainingModel(tiny_model_dir, rank=4, seed=0)


def scored(m: TrainingModel, prompt: list[int], tokens: list[int]) -> list[float]:
    """The training model's log-probs of ``tokens`` after ``prompt`` (forward_backward, forward only)."""
    seq = prompt + tokens
    datum = Datum(seq[:-1], {"target_tokens": seq[1:], "weights": [0.0] * (len(seq) - 1)})
    return m.forward_backward([datum], "cross_entropy", {}, backward=False).logprobs[0][len(prompt) - 1 :]


def test_sequences_their_lengths_and_stop_reasons(peaked_dir: Path) -> None:
    sampler = Sampler.load(peaked_dir)
    out = sampler.sample(PROMPT, num_samples=8, max_tokens=24, temperature=1.0, seed=0)
    assert len(out.sequences) == 8 and out.prompt_logprobs is None
    reasons = {s.stop_reason for s in out.sequences}
    assert reasons == {"stop", "length"}, [len(s.tokens) for s in out.sequences]
    for s in out.sequences:
        assert 1 <= len(s.tokens) <= 24 and len(s.logprobs) == len(s.tokens)
        assert all(math.isfinite(x) and x <= 0 for x in s.logprobs)
        if s.stop_reason == "stop":
            assert s.tokens[-1] == 0 and 0 not in s.tokens[:-1]  # EOS included, once, last
        else:
            assert len(s.tokens) == 24 and 0 not in s.tokens


def test_a_seed_reproduces_and_no_seed_draws_anew(trained: TrainingModel) -> None:
    sampler = Sampler.for_training(trained)
    a = sampler.sample(PROMPT, 3, 12, 1.0, seed=7)
    b = sampler.sample(PROMPT, 3, 12, 1.0, seed=7)
    assert [s.tokens for s in a.sequences] == [s.tokens for s in b.sequences]
    assert [s.logprobs for s in a.sequences] == [s.logprobs for s in b.sequences]
    assert len({tuple(s.tokens) for s in a.sequences}) == 3  # each sample its own stream
    unseeded = [sampler.sample(PROMPT, 1, 12, 1.0).sequences[0].tokens for _ in range(2)]
    assert unseeded[0] != unseeded[1]


def test_stop_strings_and_stop_ids_cut_after_the_stopping_token(trained: TrainingModel) -> None:
    sampler = Sampler.for_training(trained)
    free = sampler.sample(PROMPT, 1, 16, 1.0, seed=3).sequences[0]
    assert free.stop_reason == "length"
    k = 5
    token = free.tokens[k]
    first = free.tokens.index(token)  # the first time that token was sampled
    char = sampler.tokenizer.decode([token])
    by_id = sampler.sample(PROMPT, 1, 16, 1.0, seed=3, stop=[token]).sequences[0]
    by_text = sampler.sample(PROMPT, 1, 16, 1.0, seed=3, stop=[char]).sequences[0]
    for cut in (by_id, by_text):
        assert cut.tokens == free.tokens[: first + 1]
        assert cut.logprobs == pytest.approx(free.logprobs[: first + 1])
        assert cut.stop_reason == "stop"
    # a string that straddles two tokens stops at the token that completes it
    two = sampler.tokenizer.decode(free.tokens[k : k + 2])
    straddle = sampler.sample(PROMPT, 1, 16, 1.0, seed=3, stop=two).sequences[0]
    end = stop_string_end(free.tokens, [two], sampler.tokenizer)
    assert end is not None and end <= k + 2
    assert straddle.tokens == free.tokens[:end]


def test_logprobs_are_the_sampling_distributions(trained: TrainingModel) -> None:
    """At T = 1, top_p = 1 the sampler's log-probs are the model's own (what forward_backward computes); at T = 0
    (greedy) too, by a scoring pass; at T = 0.5 they are those of softmax(z / T), which differ."""
    sampler = Sampler.for_training(trained)
    for temperature in (1.0, 0.0):
        s = sampler.sample(PROMPT, 2, 10, temperature, seed=1).sequences
        for seq in s:
            assert seq.logprobs == pytest.approx(scored(trained, PROMPT, seq.tokens), abs=1e-4)
        if temperature == 0.0:
            assert s[0].tokens == s[1].tokens
    cold = sampler.sample(PROMPT, 1, 10, 0.5, seed=1).sequences[0]
    assert cold.logprobs != pytest.approx(scored(trained, PROMPT, cold.tokens), abs=1e-3)


def test_prompt_logprobs(trained: TrainingModel) -> None:
    sampler = Sampler.for_training(trained)
    out = sampler.sample(PROMPT, 1, 4, 1.0, seed=0, prompt_logprobs=True)
    assert out.prompt_logprobs is not None and len(out.prompt_logprobs) == len(PROMPT)
    assert out.prompt_logprobs[0] is None
    assert out.prompt_logprobs[1:] == pytest.approx(scored(trained, PROMPT[:1], PROMPT[1:]), abs=1e-5)
    assert sampler.sample([5], 1, 2, 1.0, seed=0, prompt_logprobs=True).prompt_logprobs == [None]


def test_it_samples_the_training_models_current_weights(trained: TrainingModel) -> None:
    sampler = Sampler.for_training(trained)
    before = sampler.sample(PROMPT, 1, 4, 1.0, seed=0, prompt_logprobs=True).prompt_logprobs
    target = [*PROMPT[1:], 15]
    for _ in range(3):
        trained.forward_backward([Datum(PROMPT, {"target_tokens": target, "weights": [1.0] * 4})], "cross_entropy", {})
        trained.optim_step(**ADAM)
    after = sampler.sample(PROMPT, 1, 4, 1.0, seed=0, prompt_logprobs=True).prompt_logprobs
    assert after is not None and before is not None and sampler.synced == trained.version == 3
    assert after[1:] != pytest.approx(before[1:], abs=1e-3)
    assert after[1:] == pytest.approx(scored(trained, PROMPT[:1], PROMPT[1:]), abs=1e-5)


def test_an_adapter_folder_samples_what_the_resident_model_does(trained: TrainingModel, tmp_path: Path) -> None:
    target = [*PROMPT[1:], 15]
    trained.forward_backward([Datum(PROMPT, {"target_tokens": target, "weights": [1.0] * 4})], "cross_entropy", {})
    trained.optim_step(**ADAM)
    resident = Sampler.for_training(trained).sample(PROMPT, 2, 8, 1.0, seed=5, prompt_logprobs=True)
    folder = Sampler.load(trained.model_dir, trained.save_adapter(tmp_path / "adapter"))
    saved = folder.sample(PROMPT, 2, 8, 1.0, seed=5, prompt_logprobs=True)
    assert [s.tokens for s in saved.sequences] == [s.tokens for s in resident.sequences]
    assert saved.prompt_logprobs is not None and resident.prompt_logprobs is not None
    assert saved.prompt_logprobs[1:] == pytest.approx(resident.prompt_logprobs[1:], abs=1e-5)
    folder.close()
    folder.close()  # once


def test_the_base_model_alone(tiny_model_dir: Path) -> None:
    base = Sampler.load(tiny_model_dir).sample(PROMPT, 1, 4, 1.0, seed=0, prompt_logprobs=True).prompt_logprobs
    fresh = TrainingModel(tiny_model_dir, rank=4, seed=3)  # B = 0: the base model's outputs
    assert base is not None and base[1:] == pytest.approx(scored(fresh, PROMPT[:1], PROMPT[1:]), abs=1e-5)


def test_unseeded_calls_share_one_decode_each_as_if_alone(peaked_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sample_many: unseeded calls at one temperature share one decode, each row with its call's own stream, row
    numbers, length and stop strings: what the call draws alone with the seed it was given (up to the rounding of a
    bigger batch); a seeded call and a greedy one decode on their own, a refused call fails alone."""
    sampler = Sampler.load(peaked_dir)
    monkeypatch.setattr(sampling, "_UNSEEDED", itertools.count(100))  # the unseeded calls get 100, 101, 102
    calls = [
        SampleCall(PROMPT, 3, 24, 1.0),
        SampleCall([1, 40], 2, 9, 1.0, stop=["zz"]),
        SampleCall(PROMPT, 1, 24, 1.0, top_p=2.0),  # refused: top_p above 1
        SampleCall([1, 50, 51, 52, 53, 54], 2, 16, 1.0, prompt_logprobs=True),
        SampleCall(PROMPT, 2, 12, 1.0, seed=5),  # seeded: alone
        SampleCall(PROMPT, 2, 8, 0.0),  # greedy: another key
    ]
    before = sampler.decodes
    together = sampler.sample_many(calls)
    assert sampler.decodes - before == 3  # the three unseeded T=1 calls in one; the seeded; the greedy
    err = together[2]
    assert isinstance(err, BatchError) and err.param == "sampling_params.top_p"
    for i, seed in ((0, 100), (1, 101), (3, 102), (4, 5)):
        c = calls[i]
        alone = sampler.sample(c.prompt, c.num_samples, c.max_tokens, 1.0, 1.0, seed, c.stop, c.prompt_logprobs)
        got = together[i]
        assert not isinstance(got, BatchError)
        assert [s.tokens for s in got.sequences] == [s.tokens for s in alone.sequences], i
        assert [s.stop_reason for s in got.sequences] == [s.stop_reason for s in alone.sequences], i
        for a, b in zip(got.sequences, alone.sequences, strict=True):
            assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)
            if i == 4:
                assert a.logprobs == b.logprobs  # decoded alone both times: exact
        assert got.prompt_logprobs == pytest.approx(alone.prompt_logprobs)
    assert all(len(s.tokens) <= 9 for s in together[1].sequences)  # its own max_tokens in a decode of 24
    assert {s.stop_reason for s in together[0].sequences} <= {"stop", "length"}


def test_bad_parameters_are_refused(trained: TrainingModel) -> None:
    sampler = Sampler.for_training(trained)
    with pytest.raises(BatchError) as err:
        sampler.sample(PROMPT, 1, 4, 1.0, stop=[sampler.vocab_size])
    assert err.value.param == "sampling_params.stop"
    with pytest.raises(BatchError) as err:
        sampler.sample([], 1, 4, 1.0)
    assert err.value.param == "prompt"


def test_no_tensor_is_created_on_an_implicit_device(trained: TrainingModel) -> None:
    sampler = Sampler.for_training(trained)
    with ImplicitDeviceGuard() as guard:
        sampler.sample(PROMPT, 2, 6, 1.0, seed=0, prompt_logprobs=True)
        sampler.sample(PROMPT, 2, 6, 0.0, stop=["a"])
    assert not guard.violations, guard.violations
