"""The "Write your own loop" guide's GRPO loop (docs/guides/own_loop/grpo_loop.py, included in the page as is), run
as written with the ``tinker`` SDK against the served demo stack (tests/inference_stack.py: Postgres, Redis, S3, the
API, a Celery worker, vLLM's CPU server): the demo task's reward rises, and the loop's last sampler checkpoint
answers through ``/v1/chat/completions`` with OpenAI's SDK, by its ``tinker://`` path and by its checkpoint id.

The SDK's ``get_tokenizer`` loads the tokenizer by the model's name from the Hugging Face cache (the hub, offline
here): the demo model's tokenizer files are put there first, as a user who downloaded the model has them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from openai import OpenAI

from grpo_core.models.catalog import SMOLLM2_ID
from scripts.local_stack import ROOT
from tests.inference_stack import ServedDemo

pytestmark = [pytest.mark.integration, pytest.mark.slow]
GUIDE_LOOP = ROOT / "docs" / "guides" / "own_loop" / "grpo_loop.py"


def hf_cache(root: Path, repo_id: str, folder: Path) -> Path:
    """An offline Hugging Face cache (HF_HOME) holding ``folder``'s tokenizer and config files as ``repo_id``."""
    repo = root / "hub" / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / "local"
    snapshot.mkdir(parents=True)
    for f in folder.iterdir():
        if f.is_file() and f.suffix != ".safetensors":
            shutil.copy(f, snapshot / f.name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("local")
    return root


def test_the_guides_loop_raises_the_reward_and_its_checkpoint_answers_chat_completions(
    served_demo: ServedDemo, smollm2_catalog: Path, tmp_path: Path
) -> None:
    env = dict(
        os.environ,
        TINKER_BASE_URL=served_demo.stack.url,
        TINKER_API_KEY=f"tml-{served_demo.api_key}",
        HF_HOME=str(hf_cache(tmp_path / "hf", SMOLLM2_ID, smollm2_catalog / SMOLLM2_ID)),
        HF_HUB_OFFLINE="1",
        TINKER_TELEMETRY="0",
        STEPS="8",  # the guide's 12 less four: the reward has risen by then (each step ~16 s of this suite)
    )
    served_demo.stack.start_worker()
    try:
        run = subprocess.run(
            [sys.executable, str(GUIDE_LOOP)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=1200
        )
    finally:
        served_demo.stack.stop_worker()
    assert run.returncode == 0, run.stdout + run.stderr[-4000:]
    rewards = [float(r) for r in re.findall(r"^step \d+: reward ([0-9.]+)$", run.stdout, re.MULTILINE)]
    assert len(rewards) == 8, run.stdout
    first, last = sum(rewards[:3]) / 3, sum(rewards[-3:]) / 3
    assert last > first + 0.25, rewards  # e.g. 0.20 -> 0.81 on this machine
    path = re.search(r"^sampler checkpoint: (tinker://\S+)$", run.stdout, re.MULTILINE)
    assert path is not None, run.stdout

    listed = httpx.get(
        f"{served_demo.stack.url}/api/v1/checkpoints", headers={"X-API-Key": f"tml-{served_demo.api_key}"}
    ).json()["checkpoints"]
    ckpt = next(c for c in listed if c["tinker_path"] == path[1])
    messages = [{"role": "user", "content": "What is 4 + 5? Answer with only the number."}]
    with OpenAI(base_url=f"{served_demo.stack.url}/v1", api_key=served_demo.api_key) as sdk:
        answers = {}
        for model in (path[1], ckpt["id"]):
            r = sdk.chat.completions.create(model=model, messages=messages, max_tokens=8, temperature=0, logprobs=True)
            assert r.model == model and r.choices[0].message.content, r
            assert r.choices[0].logprobs and r.choices[0].logprobs.content
            answers[model] = [round(t.logprob, 4) for t in r.choices[0].logprobs.content]
        assert answers[path[1]] == answers[ckpt["id"]]  # one adapter by either name
        base = sdk.chat.completions.create(
            model=SMOLLM2_ID, messages=messages, max_tokens=8, temperature=0, logprobs=True
        )
        assert base.choices[0].logprobs and base.choices[0].logprobs.content
        assert [round(t.logprob, 4) for t in base.choices[0].logprobs.content] != answers[ckpt["id"]]
