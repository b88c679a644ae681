"""The trained model, used: the demo job trained on real services, then asked through the official ``openai`` SDK
with the real vLLM CPU server behind the API (tests/inference_stack.py). The fine-tuned model answers the
held-out additions differently from the base model and scores higher with the demo grader; streaming, checkpoints
and another project's access are checked on the same server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from grpo_core.models.catalog import SMOLLM2_ID
from grpo_core.rewards.graders import build_grader
from grpo_core.schemas.graders import PythonGrader
from scripts.demo import GRADER_SOURCE
from tests.inference_stack import ServedDemo

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def sdk(served_demo: ServedDemo) -> Iterator[OpenAI]:
    with OpenAI(base_url=f"{served_demo.stack.url}/v1", api_key=served_demo.api_key, timeout=300) as c:
        yield c


def score(answers: list[str], rows: list[dict[str, str]]) -> float:
    grader = build_grader(PythonGrader(source=GRADER_SOURCE, name="first_number"))
    rewards = [s or 0.0 for s in grader.score(answers, rows).scores]
    return sum(rewards) / len(rewards)


def ask_all(sdk: OpenAI, model: str, rows: list[dict[str, str]]) -> list[str]:
    out = []
    for row in rows:
        r = sdk.chat.completions.create(
            model=model, messages=[{"role": "user", "content": row["prompt"]}], temperature=0, max_tokens=24
        )
        assert r.model == model and r.choices[0].message.content is not None
        out.append(r.choices[0].message.content)
    return out


def test_the_fine_tuned_model_answers_differently_and_scores_higher(served_demo: ServedDemo, sdk: OpenAI) -> None:
    model = served_demo.job["fine_tuned_model"]
    listed = {m.id: m for m in sdk.models.list()}
    assert SMOLLM2_ID in listed and listed[model].owned_by == served_demo.job["organization_id"]
    rows = served_demo.held_out
    started = time.monotonic()
    tuned = ask_all(sdk, model, rows)  # the first request loads the adapter into vLLM
    tuned_s = time.monotonic() - started
    base = ask_all(sdk, SMOLLM2_ID, rows)
    before, after = score(base, rows), score(tuned, rows)
    print(f"held-out reward, greedy, {len(rows)} prompts: base {before:.3f}, fine-tuned {after:.3f} ({tuned_s:.1f} s)")
    for row, b, t in list(zip(rows, base, tuned, strict=True))[:4]:
        print(f"  {row['prompt']!r} (answer {row['answer']}): base {b!r} | fine-tuned {t!r}")
    assert tuned != base
    assert after > before


def test_streaming_n_seed_logprobs_and_stop_through_the_sdk(served_demo: ServedDemo, sdk: OpenAI) -> None:
    model = served_demo.job["fine_tuned_model"]
    messages: Any = [{"role": "user", "content": served_demo.held_out[0]["prompt"]}]
    pieces, names = [], set()
    first_token_at = None
    started = time.monotonic()
    for chunk in sdk.chat.completions.create(model=model, messages=messages, stream=True, max_tokens=16, temperature=0):
        names.add(chunk.model)
        if chunk.choices and chunk.choices[0].delta.content:
            first_token_at = first_token_at or time.monotonic() - started
            pieces.append(chunk.choices[0].delta.content)
    assert names == {model} and first_token_at is not None
    whole = sdk.chat.completions.create(model=model, messages=messages, max_tokens=16, temperature=0)
    assert "".join(pieces) == whole.choices[0].message.content
    # n, seed, logprobs and max_completion_tokens (OpenAI's newer name)
    kw: dict[str, Any] = {"model": model, "messages": messages, "temperature": 1.0, "n": 3, "seed": 7}
    a = sdk.chat.completions.create(**kw, max_completion_tokens=8, logprobs=True, top_logprobs=2)
    b = sdk.chat.completions.create(**kw, max_completion_tokens=8)
    assert len(a.choices) == 3 and [c.message.content for c in a.choices] == [c.message.content for c in b.choices]
    assert a.choices[0].logprobs is not None and a.choices[0].logprobs.content
    assert len(a.choices[0].logprobs.content[0].top_logprobs) == 2
    assert a.usage is not None and a.usage.completion_tokens <= 3 * 8
    # the text route with stop
    text = sdk.completions.create(model=model, prompt="1, 2, 3, 4,", max_tokens=12, temperature=0, stop=[","])
    assert text.model == model and "," not in text.choices[0].text


def test_checkpoints_are_served_by_name_and_by_id(served_demo: ServedDemo, sdk: OpenAI) -> None:
    with served_demo.client() as api:
        job_id = served_demo.job["id"]
        ckpts = api.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints").json()["data"]
    assert len(ckpts) >= 2  # steps 10 and 20
    messages: Any = [{"role": "user", "content": served_demo.held_out[1]["prompt"]}]

    def first_logprobs(model: str) -> list[float]:
        """The log-probs of the first 4 greedy tokens: which weights answered, to the last digit."""
        r = sdk.chat.completions.create(model=model, messages=messages, max_tokens=4, temperature=0, logprobs=True)
        assert r.model == model and r.choices[0].logprobs and r.choices[0].logprobs.content
        return [round(t.logprob, 4) for t in r.choices[0].logprobs.content]

    by_step = {}
    for c in ckpts:
        by_name, by_id = first_logprobs(c["fine_tuned_model_checkpoint"]), first_logprobs(c["id"])
        assert by_name == by_id  # a checkpoint's name and its id are one adapter
        by_step[c["step_number"]] = by_name
    base = first_logprobs(SMOLLM2_ID)
    assert len({tuple(v) for v in [*by_step.values(), base]}) == len(by_step) + 1  # each its own weights
    assert first_logprobs(served_demo.job["fine_tuned_model"]) == by_step[max(by_step)]  # the final = newest


def test_another_project_cannot_use_the_model(served_demo: ServedDemo) -> None:
    import subprocess
    import sys

    from scripts.local_stack import ROOT

    def admin(*args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "api.admin", *args],
            env=served_demo.stack.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    other = admin("keys", "create", "--project", admin("projects", "create", "someone-else"), "--name", "b")
    with OpenAI(base_url=f"{served_demo.stack.url}/v1", api_key=other) as b:
        with pytest.raises(openai.NotFoundError, match="does not exist or you do not have access"):
            b.chat.completions.create(
                model=served_demo.job["fine_tuned_model"], messages=[{"role": "user", "content": "hi"}]
            )
        assert served_demo.job["fine_tuned_model"] not in {m.id for m in b.models.list()}
        assert b.chat.completions.create(model=SMOLLM2_ID, messages=[{"role": "user", "content": "hi"}], max_tokens=4)


def test_readyz_reports_the_inference_server(served_demo: ServedDemo) -> None:
    r = httpx.get(f"{served_demo.stack.url}/readyz", timeout=30)
    assert r.status_code == 200 and r.json()["checks"]["inference"] == "ok", r.text
