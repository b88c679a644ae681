"""Model-backed graders: ``score_model`` (an LLM judge behind any OpenAI-compatible ``/chat/completions``) and
the embeddings of ``text_similarity``'s ``cosine`` (an OpenAI-compatible ``/embeddings``).

The operator configures the endpoint (GraderEnv.judge: JUDGE_BASE_URL, JUDGE_API_KEY); users name the model and
write the messages with templates. A score_model grader may instead name its own ``endpoint`` and the project
secret holding its key (``api_key_secret``): the worker checks the endpoint's addresses again
(grpo_core.schemas.endpoints) and takes the key from the job's claim (GraderEnv.secrets). That key is sent in the
Authorization header and nowhere else: it is scrubbed from every failure's text (an error, a judge's reply that
echoes it), which a job's events and samples show. The score is the first number in the judge's reply, clipped
to the grader's ``range``. Calls for one batch run concurrently (``judge_concurrency``); a failed or unparsable
call scores 0 with the reason, like every grader error (grpo_core.rewards.graders).
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
from grpo_core.schemas.endpoints import EndpointRefused, check_addresses
from grpo_core.schemas.graders import ScoreModelGrader

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
# OpenAI's sampling_params names -> chat.completions parameters
_PARAMS = {"temperature": "temperature", "top_p": "top_p", "seed": "seed", "max_completions_tokens": "max_tokens"}


class JudgeNotConfigured(ValueError):
    """A grader whose model endpoint this process cannot call: the service has none configured (judge or
    embeddings), the grader's own endpoint is refused, or the secret holding its key is not in the job's claim."""


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
    """A score_model grader: the service's judge, or the grader's own endpoint with its project's key."""

    def __init__(self, spec: ScoreModelGrader, env: GraderEnv) -> None:
        self.spec = spec
        self.name = spec.name
        self.env = env
        self.dry = spec.endpoint is not None and not env.call_own_judges
        if spec.endpoint is None:
            if not env.judge.base_url:
                raise JudgeNotConfigured(
                    "score_model graders need a judge endpoint, and this service has none configured (JUDGE_BASE_URL)"
                )
            base_url, self._key = env.judge.base_url, env.judge.api_key
        else:
            base_url, self._key = spec.endpoint, None if self.dry else self._own_key(spec, env)
        self.client = _client(base_url, self._key, env.request_timeout)

    @staticmethod
    def _own_key(spec: ScoreModelGrader, env: GraderEnv) -> str | None:
        """Check the grader's own endpoint's addresses now (DNS may have moved since the job was created) and
        return its key from the job's secrets (None: the grader names no secret, no key is sent)."""
        assert spec.endpoint is not None
        try:
            check_addresses(spec.endpoint, allow_private=env.private_endpoints, resolve=True)
        except EndpointRefused as exc:
            raise JudgeNotConfigured(f"score_model grader {spec.name!r}: {exc}") from None
        if spec.api_key_secret is None:
            return None
        value = env.secrets.get(spec.api_key_secret)
        if value is None:
            raise JudgeNotConfigured(
                f"score_model grader {spec.name!r}: the project secret {spec.api_key_secret!r} holding its "
                "endpoint's key is not available to this job (deleted, or the API cannot decrypt it)"
            )
        return value.get_secret_value()

    def _scrub(self, text: str) -> str:
        """``text`` without the project's key (a judge may echo what it was sent; a library may quote a header)."""
        return text.replace(self._key, "[secret]") if self._key else text

    def _one(self, text: str, row: dict[str, Any], extra: dict[str, Any] | None) -> tuple[float, SampleError | None]:
        sample = make_sample(text, extra)
        try:
            messages = [{"role": m["role"], "content": render(m["content"], sample, row)} for m in self.spec.input]
        except TemplateError as exc:
            return 0.0, InvalidVariable(f"{type(exc).__name__}: {exc}")
        if self.dry:  # the API's checks: the messages render. An error, so a worker that forgot the claim's secrets
            # (GraderEnv.call_own_judges) fails loudly rather than training on zeros; the API's checks ignore it.
            return 0.0, JudgeRequestError("not called here: a grader's own judge is called by the job's worker only")
        body: dict[str, Any] = {"model": self.spec.model, "messages": messages}
        body |= {_PARAMS[k]: v for k, v in self.spec.sampling_params.items() if k in _PARAMS}
        try:
            resp = self.client.post("/chat/completions", json=body)
            resp.raise_for_status()
            reply = resp.json()["choices"][0]["message"]["content"] or ""
        except Exception as exc:  # network, HTTP status, malformed body: the judge's failure, not the sample's
            return 0.0, JudgeRequestError(self._scrub(f"judge request failed: {type(exc).__name__}: {exc}"))
        found = _NUMBER.search(reply)
        if found is None:
            return 0.0, JudgeReplyError(f"judge reply has no number: {self._scrub(reply)[:200]!r}")
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
