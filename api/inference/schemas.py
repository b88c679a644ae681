"""OpenAI's chat and text completion requests, as this service checks them before forwarding.

The fields OpenAI documents that a sampling server honours are checked here (a bad value is our 422 naming the
field); any other field is passed through to the inference server, which answers for it (vLLM's own extras, e.g.
``top_k``, ``min_p``, ``chat_template_kwargs``, work unchanged). The answers are the server's, in OpenAI's shape,
with ``model`` set to the name the caller sent.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Sampling(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = Field(
        min_length=1,
        max_length=512,
        description="A base model id, a job's fine_tuned_model, a checkpoint's fine_tuned_model_checkpoint "
        "(ft:…:ckpt-step-N) or a checkpoint id (ftckpt-…).",
    )
    stream: bool = Field(False, description="Server-sent events, one chunk per token batch, ending with [DONE].")
    stream_options: dict[str, Any] | None = None
    n: int | None = Field(None, ge=1, le=128, description="Completions per prompt.")
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    stop: str | list[str] | None = Field(None, description="Up to 4 sequences where the completion stops.")
    seed: int | None = Field(None, description="Same seed and parameters: the same completion (best effort).")
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    user: str | None = None


class ChatCompletionRequest(_Sampling):
    messages: list[dict[str, Any]] = Field(min_length=1, description="OpenAI chat messages (role, content).")
    max_completion_tokens: int | None = Field(None, ge=1, description="OpenAI's newer name for max_tokens.")
    logprobs: bool | None = Field(None, description="Return the log-probability of each output token.")
    top_logprobs: int | None = Field(None, ge=0, le=20, description="With logprobs: the k most likely tokens too.")


class CompletionRequest(_Sampling):
    prompt: str | list[str] | list[int] | list[list[int]] = Field(description="Text, texts, or token ids.")
    logprobs: int | None = Field(None, ge=0, le=20, description="Log-probabilities of the k most likely tokens.")
    echo: bool | None = None
    suffix: str | None = None
