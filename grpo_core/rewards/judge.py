"""Model-backed graders: ``score_model`` (an LLM judge behind any OpenAI-compatible ``/chat/completions``) and
the embeddings of ``text_similarity``'s ``cosine`` (an OpenAI-compatible ``/embeddings``).

The operator configures the endpoint (GraderEnv.judge_url / judge_api_key); users name the model and write the
messages with templates. The score is the first number in the judge's reply, clipped to the grader's ``range``.
Calls for one batch run concurrently (``judge_concurrency``); a failed or unparsable call scores 0 with the
reason, like every grader error (grpo_core.rewards.graders).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from grpo_core.rewards.base import (
    GraderEnv,
    GraderResult,
    InvalidVariable,
    JudgeReplyError,
    JudgeRequestError,
    SampleError,
)
from grpo_core.rewards.templates import TemplateError, make_sample, render
from grpo_core.schemas.graders import ScoreModelGrader

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
# OpenAI's sampling_params names -> chat.completions parameters
_PARAMS = {"temperature": "temperature", "top_p": "top_p", "seed": "seed", "max_completions_tokens": "max_tokens"}


class JudgeNotConfigured(ValueError):
    """A grader that needs a model endpoint (judge or embeddings) on a service that has none configured."""


def _client(base_url: str, api_key: str | None, timeout: float) -> Any:
    """An httpx client for an OpenAI-compatible endpoint (httpx is imported only when a grader needs one)."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)


class Embeddings:
    """Cosine similarity of two texts' embeddings from the operator's endpoint (one request per pair)."""

    def __init__(self, env: GraderEnv) -> None:
        if not env.embeddings.base_url or not env.embeddings.model:
            raise JudgeNotConfigured(
                "evaluation_metric 'cosine' needs an embedding model, and this service has none configured "
                "(EMBEDDING_BASE_URL, EMBEDDING_MODEL); use fuzzy_match, bleu, gleu, meteor or rouge_*"
            )
        self.model = env.embeddings.model
        self.client = _client(env.embeddings.base_url, env.embeddings.api_key, env.request_timeout)

    def cosine(self, a: str, b: str) -> float:
        resp = self.client.post("/embeddings", json={"model": self.model, "input": [a, b]})
        resp.raise_for_status()
        u, v = (d["embedding"] for d in sorted(resp.json()["data"], key=lambda d: d["index"]))
        dot = sum(x * y for x, y in zip(u, v, strict=True))
        norm = (sum(x * x for x in u) * sum(y * y for y in v)) ** 0.5
        if norm == 0:
            raise ValueError("an embedding is all zeros")
        return float(dot / norm)


class ScoreModel:
    def __init__(self, spec: ScoreModelGrader, env: GraderEnv) -> None:
        if not env.judge.base_url:
            raise JudgeNotConfigured(
                "score_model graders need a judge endpoint, and this service has none configured (JUDGE_BASE_URL)"
            )
        self.spec = spec
        self.name = spec.name
        self.env = env
        self.client = _client(env.judge.base_url, env.judge.api_key, env.request_timeout)

    def _one(self, text: str, row: dict[str, Any], extra: dict[str, Any] | None) -> tuple[float, SampleError | None]:
        sample = make_sample(text, extra)
        try:
            messages = [{"role": m["role"], "content": render(m["content"], sample, row)} for m in self.spec.input]
        except TemplateError as exc:
            return 0.0, InvalidVariable(f"{type(exc).__name__}: {exc}")
        body: dict[str, Any] = {"model": self.spec.model, "messages": messages}
        body |= {_PARAMS[k]: v for k, v in self.spec.sampling_params.items() if k in _PARAMS}
        try:
            resp = self.client.post("/chat/completions", json=body)
            resp.raise_for_status()
            reply = resp.json()["choices"][0]["message"]["content"] or ""
        except Exception as exc:  # network, HTTP status, malformed body: the judge's failure, not the sample's
            return 0.0, JudgeRequestError(f"judge request failed: {type(exc).__name__}: {exc}")
        found = _NUMBER.search(reply)
        if found is None:
            return 0.0, JudgeReplyError(f"judge reply has no number: {reply[:200]!r}")
        lo, hi = self.spec.range
        return min(hi, max(lo, float(found.group()))), None

    def score(
        self, texts: list[str], rows: list[dict[str, Any]], extras: list[dict[str, Any]] | None = None
    ) -> GraderResult:
        with ThreadPoolExecutor(max_workers=max(1, self.env.judge_concurrency)) as pool:
            results = list(pool.map(self._one, texts, rows, extras or [{}] * len(texts)))
        return GraderResult([s for s, _ in results], [e for _, e in results])

    def close(self) -> None:
        self.client.close()
