"""``rft chat MODEL [PROMPT]``: ask a base model, a fine-tuned model or a checkpoint through the service's
``/v1/chat/completions``, tokens printed as they stream. Without PROMPT: a conversation, one line per turn, until
an empty line or end of input."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import httpx
import typer

from rft_cli.api import ApiError, CliError, Config


def stream_chat(config: Config, body: dict[str, Any]) -> Iterator[str]:
    """The answer's text pieces, as the server sends them (OpenAI's chat.completion.chunk events)."""
    http = config.client().get_httpx_client()
    try:
        with http.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as resp:
            if resp.status_code >= 400:
                resp.read()
                raise ApiError.from_body(resp.status_code, resp.content)
            for line in resp.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if "error" in chunk:
                    raise CliError(f"the answer stopped: {chunk['error'].get('message')}")
                for choice in chunk.get("choices", []):
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        yield piece
    except httpx.TransportError as exc:
        raise CliError(f"cannot reach the RFT API at {config.base_url}: {exc or type(exc).__name__}") from exc


def chat(
    ctx: typer.Context,
    model: Annotated[str, typer.Argument(help="A base model id, a fine_tuned_model, ft:…:ckpt-step-N or ftckpt-….")],
    prompt: Annotated[str | None, typer.Argument(help="One question; without it, a conversation on stdin.")] = None,
    system: Annotated[str | None, typer.Option("--system", "-s", help="A system message first.")] = None,
    temperature: Annotated[float | None, typer.Option(min=0, max=2)] = None,
    max_tokens: Annotated[int, typer.Option(min=1, help="Tokens per answer at most.")] = 512,
    seed: Annotated[int | None, typer.Option(help="Same seed, same answer (best effort).")] = None,
) -> None:
    """Chat with a model of this service (streamed)."""
    config: Config = ctx.obj
    messages: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
    params: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
    if temperature is not None:
        params["temperature"] = temperature
    if seed is not None:
        params["seed"] = seed
    interactive = prompt is None
    while True:
        if interactive:
            if sys.stdin.isatty():
                sys.stderr.write("> ")
                sys.stderr.flush()
            line = sys.stdin.readline()
            if not line.strip():
                return
            question = line.rstrip("\n")
        else:
            question = str(prompt)
        messages.append({"role": "user", "content": question})
        answer: list[str] = []
        for piece in stream_chat(config, {**params, "messages": messages}):
            answer.append(piece)
            sys.stdout.write(piece)
            sys.stdout.flush()
        sys.stdout.write("\n")
        sys.stdout.flush()
        if not interactive:
            return
        messages.append({"role": "assistant", "content": "".join(answer)})
