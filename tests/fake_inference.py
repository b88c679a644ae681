"""A fake OpenAI-compatible inference server with vLLM's run-time LoRA routes, for the unit tests of the API's
adapter cache (api.inference.service). A real HTTP server on a free port (uvicorn in a thread), so the API's
client is exercised as it is against vLLM; the integration tests use the real vLLM server instead.

It keeps what vLLM keeps (the registered adapters, each with its base as ``parent``), refuses what vLLM refuses
(a second load under one name, a path without ``adapter_config.json``, an unknown model: 404), and answers with a
completion that names the model it ran on, so a test sees which adapter served a request.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from scripts.local_stack import free_port


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "BadRequestError", "code": status}}, status_code=status)


class FakeInference:
    def __init__(self, base: str) -> None:
        self.base = base
        self.adapters: dict[str, str] = {}  # name -> path
        self.calls: list[tuple[str, str]] = []  # (route, model or adapter name)
        self.fail_load: tuple[int, str] | None = None  # the next loads' error (status, message)
        self.bodies: list[dict[str, Any]] = []  # every completion request's body, as received
        self.delay = 0.0  # seconds each completion takes (a request in flight)
        self.app = self._build()
        self._server: uvicorn.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _build(self) -> FastAPI:
        app = FastAPI()

        @app.get("/v1/models")
        def models() -> dict[str, Any]:
            cards = [{"id": self.base, "object": "model", "parent": None}]
            cards += [{"id": n, "object": "model", "parent": self.base, "root": p} for n, p in self.adapters.items()]
            return {"object": "list", "data": cards}

        @app.post("/v1/load_lora_adapter")
        async def load(request: Request) -> Any:
            body = await request.json()
            name, path = body["lora_name"], body["lora_path"]
            self.calls.append(("load", name))
            if self.fail_load is not None:
                return _error(*self.fail_load)
            if name in self.adapters:
                return _error(400, f"The lora adapter '{name}' has already been loaded.")
            if not (Path(path) / "adapter_config.json").is_file():
                return _error(404, f"No adapter found for {path}")
            self.adapters[name] = path
            return JSONResponse(f"Success: LoRA adapter '{name}' added successfully.")

        @app.post("/v1/unload_lora_adapter")
        async def unload(request: Request) -> Any:
            name = (await request.json())["lora_name"]
            self.calls.append(("unload", name))
            if self.adapters.pop(name, None) is None:
                return _error(404, f"The lora adapter '{name}' cannot be found.")
            return JSONResponse("ok")

        async def complete(request: Request, route: str) -> Any:
            body = await request.json()
            model = body["model"]
            self.calls.append((route, model))
            self.bodies.append(body)
            if self.delay:
                await asyncio.sleep(self.delay)
            if (body.get("max_tokens") or 0) > 100_000:  # as vLLM: longer than the context
                return _error(400, "This model's maximum context length is 8192 tokens.")
            if model != self.base and model not in self.adapters:
                return _error(404, f"The model `{model}` does not exist.")
            text = f"answer from {model}"
            n = body.get("n") or 1
            if body.get("stream"):
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                return StreamingResponse(_chunks(model, text, n, route, usage), media_type="text/event-stream")
            if route == "chat":
                choices = [
                    {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    for i in range(n)
                ]
                obj = "chat.completion"
            else:
                choices = [{"index": i, "text": text, "finish_reason": "stop"} for i in range(n)]
                obj = "text_completion"
            usage = {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}
            return {"id": "cmpl-1", "object": obj, "created": int(time.time()), "model": model, "choices": choices,
                    "usage": usage}  # fmt: skip

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Any:
            return await complete(request, "chat")

        @app.post("/v1/completions")
        async def completions(request: Request) -> Any:
            return await complete(request, "completions")

        return app

    def restart(self) -> None:
        """What a restarted vLLM knows: its base model, no adapter."""
        self.adapters.clear()

    def start(self) -> FakeInference:
        self.port = free_port()
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        threading.Thread(target=self._server.run, daemon=True).start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the fake inference server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True


async def _chunks(model: str, text: str, n: int, route: str, usage: bool = False) -> AsyncIterator[bytes]:
    """vLLM's stream: with ``stream_options.include_usage`` every chunk has ``usage: null`` and a last chunk with no
    choices carries it (one token a word here)."""
    words = text.split(" ")
    for i in range(n):
        for word in words:
            delta = {"index": i, "delta": {"content": word + " "}} if route == "chat" else {"index": i, "text": word}
            chunk = {"id": "c1", "object": "chat.completion.chunk", "model": model, "choices": [delta]}
            yield f"data: {json.dumps(chunk | ({'usage': None} if usage else {}))}\n\n".encode()
    if usage:
        counts = {"prompt_tokens": 3, "completion_tokens": n * len(words), "total_tokens": 3 + n * len(words)}
        chunk = {"id": "c1", "object": "chat.completion.chunk", "model": model, "choices": [], "usage": counts}
        yield f"data: {json.dumps(chunk)}\n\n".encode()
    yield b"data: [DONE]\n\n"
