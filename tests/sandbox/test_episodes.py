"""The multi-turn rollout loop (grpo_core.rollout.agent.episodes) with SmolLM2's tokenizer and template, a real
sandboxed environment, and a scripted engine standing in for the model (a unit test: what the model "says" is fixed, so
every turn, mask and metric can be checked by hand)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from grpo_core.models.catalog import SMOLLM2_ID
from grpo_core.rewards.python_runner import SandboxLimits
from grpo_core.rollout.agent.episodes import AgentRollouts, turn_seed
from grpo_core.rollout.agent.sandboxed import EnvironmentRunner
from grpo_core.rollout.batch import pack_rollout
from grpo_core.rollout.engines.base import Sampling
from grpo_core.schemas.environment import EnvironmentSpec

CALC = """
def calculator(expression: str) -> str:
    \"\"\"Evaluate an arithmetic expression.\"\"\"
    return str(eval(expression, {"__builtins__": {}}))
"""


def call(expr: str) -> str:
    return f"<tool_call>\n{json.dumps({'name': 'calculator', 'arguments': {'expression': expr}})}\n</tool_call>"


class Scripted:
    """An engine whose row r says ``script[r][k]`` at its k-th turn (each turn ends with <|im_end|>)."""

    name = "scripted"

    def __init__(self, tokenizer: Any, script: list[list[str]]) -> None:
        self.tok, self.script = tokenizer, script
        self.eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
        self.turn = [0] * len(script)
        self.seen: list[tuple[list[int], int]] = []  # (sequence, seed) of every continuation

    def _say(self, row: int, limit: int) -> list[int]:
        text = self.script[row][self.turn[row]]
        self.turn[row] += 1
        return (self.tok(text, add_special_tokens=False)["input_ids"] + [self.eos])[:limit]

    def generate(self, prompts: list[str], sampling: Sampling) -> Any:
        ids = [self.tok(p, add_special_tokens=False)["input_ids"] for p in prompts for _ in range(sampling.group_size)]
        out = [self._say(sampling.first_row + i, sampling.max_new_tokens) for i in range(len(ids))]
        logps = [[-0.25] * len(c) for c in out]
        return pack_rollout(ids, out, [self.eos], self.eos, self.tok.decode, sampling_logp=logps)

    def continue_turns(self, sequences: list[list[int]], sampling: Sampling, rows: list[int]) -> list[Any]:
        self.seen += [(s, sampling.seed) for s in sequences]
        return [(c, [-0.5] * len(c)) for c in (self._say(r, sampling.max_new_tokens) for r in rows)]

    def sync(self, model: Any, step: int) -> None:
        pass

    def suspend(self) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def tokenizer(smollm2_catalog: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2_catalog / SMOLLM2_ID)


@pytest.fixture
def agent(tokenizer: Any, bwrap_ready: None, request: pytest.FixtureRequest) -> Iterator[Any]:
    made: list[EnvironmentRunner] = []

    def make(script: list[list[str]], source: str = CALC, **spec: Any) -> AgentRollouts:
        runner = EnvironmentRunner(source, tier="bwrap", limits=SandboxLimits(load_timeout_seconds=10.0))
        made.append(runner)
        engine = Scripted(tokenizer, script)
        eos = [engine.eos]
        return AgentRollouts(engine, tokenizer, EnvironmentSpec(source=source, **spec), runner, eos)

    yield make
    for r in made:
        r.close()


ROW = {"prompt": "What is 17*23?", "answer": "391"}


def test_a_tool_episode_turn_by_turn(agent: Any, tokenizer: Any) -> None:
    script = [
        [call("17*23"), "The answer is 391."],  # calls, reads the result, answers
        ["It is 400."],  # answers at once
        [call("17*"), call("17*23"), "391"],  # a failing call, then a good one
        ['<tool_call>{"name": "calc", "arguments": {}}</tool_call>', "I give up."],  # a malformed call
    ]
    a = agent(script, max_turns=4)
    ro = a.run([a.prompt(ROW), a.prompt(ROW)], [ROW, ROW], Sampling(2, 64, 1.0, 1.0, seed=7))
    eps = ro.episodes
    assert [e.ended for e in eps] == ["done"] * 4
    assert [e.turns for e in eps] == [2, 1, 3, 2]
    assert [e.tool_calls for e in eps] == [1, 0, 2, 0]
    assert [e.tool_errors for e in eps] == [0, 0, 1, 0]
    assert [e.call_errors for e in eps] == [0, 0, 0, 1]
    assert ro.texts == ["The answer is 391.", "It is 400.", "391", "I give up."]
    first = eps[0]
    assert first.messages[-3]["tool_calls"][0]["function"] == {
        "name": "calculator",
        "arguments": '{"expression": "17*23"}',
    }
    assert first.messages[-2] == {
        "role": "tool",
        "tool_call_id": first.messages[-3]["tool_calls"][0]["id"],
        "name": "calculator",
        "content": "391",
    }
    assert eps[2].messages[2]["content"].startswith("Error: SyntaxError")
    assert eps[3].messages[-2]["content"] == "Error: there is no tool named 'calc' (tools: calculator)"
    # the grader's view: the whole conversation and every call the model made
    view = first.grader_view()
    assert view["messages"] == first.messages and [c["function"]["name"] for c in view["output_tools"]] == [
        "calculator"
    ]

    # the trajectory is, token for token, the template's rendering of the conversation: the model's tokens as
    # sampled, the rest from the template
    chat = a.chat
    msgs, tools = chat.prepare(first.messages, first.tools)
    rendered = chat._render(msgs, tools, False)
    assert tokenizer.decode(first.prompt + first.tokens) + "\n" == rendered
    # exactly the model's tokens carry loss, with the engine's log-probs
    row = ro.completion_mask[0].tolist()
    spans = first.spans
    assert [k for _, _, k in spans] == ["model", "tool", "model"]
    for a_, b_, kind in spans:
        assert set(row[a_:b_]) == {1 if kind == "model" else 0}
    assert sum(row) == sum(b_ - a_ for a_, b_, k in spans if k == "model")
    tool_text = tokenizer.decode(first.tokens[spans[1][0] : spans[1][1]])
    assert tool_text == "\n<|im_start|>tool\n391<|im_end|>\n<|im_start|>assistant\n"
    logp = ro.sampling_logp[0]
    assert logp[: spans[0][1]].eq(-0.25).all() and logp[spans[1][0] : spans[1][1]].eq(0).all()
    assert logp[spans[2][0] : spans[2][1]].eq(-0.5).all()
    # every continuation is drawn from the turn's own stream, keyed by the row
    assert {seed for _, seed in a.engine.seen} == {turn_seed(7, 1), turn_seed(7, 2)}


def test_limits_end_episodes_as_truncated(agent: Any) -> None:
    script = [
        [call("1+1"), call("2+2"), call("3+3"), "done"],  # keeps calling: max_turns=2
        ["x " * 200],  # one turn longer than max_completion_tokens
        [call("1+1"), "y " * 200],  # the second turn runs past max_total_tokens
    ]
    a = agent(script, max_turns=2, max_total_tokens=120)
    ro = a.run([a.prompt(ROW)], [ROW], Sampling(3, 100, 1.0, 1.0, seed=0))
    eps = ro.episodes
    assert [e.ended for e in eps] == ["max_turns", "length", "max_total_tokens"]
    assert ro.truncated.tolist() == [True, True, True]
    assert eps[0].tool_calls == 1  # the call of the last allowed turn is not run
    assert len(eps[2].tokens) == 120 and ro.completion_ids.shape[1] == 120


def test_respond_environment(agent: Any) -> None:
    source = """
def respond(messages, item):
    if item["answer"] in messages[-1]["content"]:
        return None
    if len(messages) >= 4:
        return {"role": "user", "content": [{"type": "text", "text": "Last try."}]}
    return {"role": "user", "content": "Wrong, try again."}
"""
    script = [["400", "391"], ["1", "2", "3", "4"], ["391"]]
    a = agent(script, source=source, max_turns=3)
    assert a.form == "respond" and a.tools_for(ROW) is None
    ro = a.run([a.prompt(ROW)], [ROW], Sampling(3, 32, 1.0, 1.0, seed=0))
    eps = ro.episodes
    assert [e.ended for e in eps] == ["done", "max_turns", "done"]
    assert [e.turns for e in eps] == [2, 3, 1]
    assert [m["content"] for m in eps[1].messages if m["role"] == "user"][1:] == ["Wrong, try again.", "Last try."]
    assert [k for _, _, k in eps[0].spans] == ["model", "user", "model"]
    assert ro.texts == ["391", "3", "391"]
    assert torch.equal(ro.truncated, torch.tensor([False, True, False]))


RETRY = """
def respond(messages, item):
    if len(messages) >= 4:
        return None
    return {"role": "user", "content": "No. Again: " + item["prompt"]}
"""


@pytest.mark.parametrize("engine_name", ["merged", "transformers"])
def test_real_engines_continue_episodes_with_the_trainers_log_probs(
    engine_name: str, tmp_path_factory: pytest.TempPathFactory, bwrap_ready: None
) -> None:
    """The merged and transformers engines sample each later turn from the trajectory's ids; the merged engine's
    sampling log-probs of every model token equal the trainer's on the packed rollout (fp32)."""
    from grpo_core.policy import load_policy, make_engine
    from grpo_core.schemas.config import GRPOConfig
    from grpo_core.update.logprobs import completion_logprobs
    from tests.tiny_model import build_tiny_model

    model_dir = build_tiny_model(tmp_path_factory.mktemp("m"), "tiny-eos", peaked_eos=True)
    model, tok = load_policy(model_dir, GRPOConfig(), seed=0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.05)
    engine = make_engine(engine_name, model, tok, model_dir)
    spec = EnvironmentSpec(source=RETRY, max_turns=2, max_total_tokens=60)
    rows = [{"prompt": "What is 2+3?"}, {"prompt": "1+1="}]
    with EnvironmentRunner(RETRY, tier="bwrap") as runner:
        agent = AgentRollouts(engine, tok, spec, runner, [tok.eos_token_id])
        ro = agent.run([agent.prompt(r) for r in rows], rows, Sampling(4, 24, 0.7, 1.0, seed=3))
    assert ro.episodes is not None
    assert any(e.turns == 2 for e in ro.episodes), [e.ended for e in ro.episodes]
    for i, e in enumerate(ro.episodes):
        assert [k for _, _, k in e.spans] == (["model", "user", "model"] if e.turns == 2 else ["model"])
        assert ro.completion_mask[i].sum() == sum(b - a for a, b, k in e.spans if k == "model")
    if engine_name == "transformers":
        assert ro.sampling_logp is None  # the trainer's own forward sampled: no correction needed
        return
    assert ro.sampling_logp is not None
    with torch.no_grad():
        logp = completion_logprobs(
            model, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask, temperature=0.7
        )
    assert float(((logp - ro.sampling_logp).abs() * ro.completion_mask).max()) < 1e-4
