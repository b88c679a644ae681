"""The inference adapter: OpenAI's ``/v1/chat/completions`` and ``/v1/completions`` forwarded to an
OpenAI-compatible server that loads LoRA adapters at run time (vLLM's ``vllm serve BASE --enable-lora`` with
``VLLM_ALLOW_RUNTIME_LORA_UPDATING=true``; ``python -m worker.inference_server`` starts one), configured by
``INFERENCE_BASE_URL``. The API never imports torch or vLLM: this module speaks HTTP.

Why the API sits in front of the server rather than users calling it: ownership (a project reaches only its own
models; the server has no notion of tenants), one key and one error shape, and adapters that appear on first use.

Adapters. A fine-tuned model or checkpoint is loaded under its checkpoint id: the API extracts the checkpoint's
adapter tar from the object store into ``INFERENCE_ADAPTER_DIR`` (a folder the server reads too: the same machine,
or a volume both mount; ``INFERENCE_ADAPTER_SERVER_DIR`` is where the server sees it) and calls
``POST /v1/load_lora_adapter``. Each API process keeps at most ``INFERENCE_MAX_ADAPTERS`` of the adapters it
loaded registered: before one more, it unloads its least recently used one that none of its requests is using
(another replica's adapters are that replica's to unload; vLLM bounds the memory itself, ``--max-cpu-loras``, so
unloading keeps the server's list short rather than freeing memory). A server that restarted, or an adapter that
another replica unloaded, answers 404: the adapter is loaded again and the request sent once more. Responses name
the model the caller asked for, not the internal adapter name (a job's final model and its last
``ckpt-step-N`` share one adapter). Each project's requests carry a ``cache_salt`` of their own, so vLLM's prefix
cache is never shared between projects (no timing side channel on another project's prompts).

Usage. Every answer's ``usage`` is handed to the caller's ``meter`` (api.usage.metering) once the answer is sent. A
stream is always asked for its usage (``stream_options.include_usage``); where the client did not ask for it, the
usage chunk is kept from it, so it sees the stream it asked for and is metered all the same.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import tarfile
import tempfile
import time
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.background import BackgroundTask

from api.core.errors import InvalidRequest, ServiceError, Unavailable, UpstreamError
from api.models.served import Target
from runtime.errors import StoreError
from runtime.storage import ObjectStore

log = logging.getLogger("api.inference")
Meter = Callable[[dict[str, Any]], Awaitable[None]]  # takes an answer's OpenAI ``usage``

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


def extract_adapter(store: ObjectStore, object_key: str, name: str, root: Path) -> Path:
    """``root/name`` holding the adapter files of the tar at ``object_key`` (once: atomic, idempotent).

    tarfile's ``data`` filter: regular files only, nothing outside the folder. Blocking (object store I/O): call it
    from a thread.
    """
    target = root / name
    if all((target / f).is_file() for f in ADAPTER_FILES):
        os.utime(target)  # its age orders the disk cache (prune_adapters)
        return target
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    try:
        archive = tmp / "adapter.tar"
        try:
            store.get_file(object_key, archive)
            with tarfile.open(archive) as tar:
                tar.extractall(tmp, filter="data")
        except (OSError, tarfile.TarError, StoreError) as exc:
            raise UpstreamError(f"the adapter of {name} cannot be read from the object store: {exc}") from None
        archive.unlink()
        missing = [f for f in ADAPTER_FILES if not (tmp / f).is_file()]
        if missing:
            raise UpstreamError(f"the adapter of {name} is incomplete in the object store (missing {missing})")
        try:
            tmp.rename(target)
        except OSError:  # another request (or replica) extracted it first
            if not (target / ADAPTER_FILES[0]).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def prune_adapters(root: Path, keep: int, registered: set[str]) -> None:
    """Delete the oldest extracted adapters beyond ``keep``, never one the server has registered (it may read the
    files again when an adapter leaves its CPU cache)."""
    if not root.is_dir():
        return
    folders = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")), key=_mtime)
    for path in folders[: max(0, len(folders) - keep)]:
        if path.name not in registered:
            shutil.rmtree(path, ignore_errors=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


class AdapterSlots:
    """The adapters this process loaded into the server, least recently used first, and how many of its requests
    are using each right now (an adapter in use is never unloaded under a request)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._used: OrderedDict[str, None] = OrderedDict()  # order = recency
        self._in_use: Counter[str] = Counter()

    def __contains__(self, name: str) -> bool:
        return name in self._used

    def touch(self, name: str) -> None:
        self._used[name] = None
        self._used.move_to_end(name)

    def forget(self, name: str) -> None:
        self._used.pop(name, None)

    def acquire(self, name: str) -> None:
        self._in_use[name] += 1

    def release(self, name: str) -> None:
        self._in_use[name] -= 1
        if self._in_use[name] <= 0:
            del self._in_use[name]

    def victims(self, adding: str) -> list[str]:
        """This process's adapters to unload so that ``adding`` fits: least recently used first, none in use."""
        excess = len(self._used) + (adding not in self._used) - self.capacity
        idle = [n for n in self._used if n != adding and not self._in_use[n]]
        return idle[: max(0, excess)]


def _upstream_message(resp: httpx.Response) -> str:
    """The error message of an OpenAI-shaped (or vLLM-shaped) error body, else the body's start."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:500] or resp.reason_phrase
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if body.get("message"):
            return str(body["message"])
    return json.dumps(body)[:500]


class InferenceClient:
    """HTTP client of one OpenAI-compatible inference server, with the adapter cache in front of it."""

    def __init__(
        self,
        base_url: str,
        store: ObjectStore,
        adapter_dir: Path,
        server_adapter_dir: str | None = None,
        *,
        max_adapters: int = 8,
        max_lora_rank: int = 64,
        timeout_seconds: float = 600.0,
        api_key: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.store = store
        self.adapter_dir = adapter_dir
        self.server_adapter_dir = (server_adapter_dir or str(adapter_dir)).rstrip("/")
        self.slots = AdapterSlots(max_adapters)
        self.max_lora_rank = max_lora_rank
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_seconds, connect=5.0),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=32),
        )
        self._locks: dict[str, asyncio.Lock] = {}

    async def aclose(self) -> None:
        await self._http.aclose()

    def _down(self, exc: Exception) -> ServiceError:
        if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
            return UpstreamError(
                f"the inference server at {self.base_url} did not answer within INFERENCE_TIMEOUT_SECONDS "
                f"({type(exc).__name__})",
                status_code=504,
                code="inference_timeout",
            )
        return Unavailable(
            f"the inference server at {self.base_url} is not answering: {type(exc).__name__}",
            code="inference_unavailable",
            headers={"Retry-After": "10"},
        )

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return await self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise self._down(exc) from None

    async def served(self) -> dict[str, list[str]]:
        """``{"base": [...], "adapters": [...]}``: what the server serves now (its ``/models``)."""
        resp = await self._request("GET", "/models")
        if resp.status_code != 200:
            raise UpstreamError(
                f"the inference server's /models answered {resp.status_code}: {_upstream_message(resp)}"
            )
        cards = resp.json().get("data", [])
        # vLLM lists a LoRA adapter with its base model as `parent`; a base model has none
        base = [str(c["id"]) for c in cards if not c.get("parent")]
        adapters = [str(c["id"]) for c in cards if c.get("parent")]
        return {"base": base, "adapters": adapters}

    async def ensure_adapter(self, target: Target, *, reload: bool = False) -> None:
        """Load ``target``'s adapter into the server unless this process knows it is there (see the module doc).
        ``reload``: the server answered 404 for it (it restarted, or another replica unloaded it)."""
        name = target.adapter
        if name is None:
            return
        if name in self.slots and not reload:
            self.slots.touch(name)
            return
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            if name in self.slots and not reload:
                self.slots.touch(name)  # loaded by a request that held the lock before this one
                return
            assert target.object_key is not None
            folder = await asyncio.to_thread(extract_adapter, self.store, target.object_key, name, self.adapter_dir)
            self._check_rank(folder, target)
            on_server = (await self.served())["adapters"]
            if name not in on_server:
                for victim in self.slots.victims(name):
                    await self._request("POST", "/unload_lora_adapter", json={"lora_name": victim})
                    self.slots.forget(victim)
                    log.info("unloaded adapter %s (least recently used)", victim)
                started = time.monotonic()
                path = f"{self.server_adapter_dir}/{name}"
                resp = await self._request("POST", "/load_lora_adapter", json={"lora_name": name, "lora_path": path})
                # "already been loaded": another replica (or a request of this one) won the race; that is success
                if resp.status_code != 200 and "has already been loaded" not in _upstream_message(resp):
                    raise UpstreamError(
                        f"the inference server could not load the adapter of {target.requested!r}: "
                        f"{_upstream_message(resp)}",
                        code="adapter_load_failed",
                    )
                log.info("loaded adapter %s from %s in %.2f s", name, path, time.monotonic() - started)
            self.slots.touch(name)
        registered = set(on_server) | {name}
        await asyncio.to_thread(prune_adapters, self.adapter_dir, max(4 * self.slots.capacity, 16), registered)

    def _check_rank(self, folder: Path, target: Target) -> None:
        """A 400 naming the limit, rather than the server's 500, for an adapter above its ``--max-lora-rank``."""
        try:
            rank = int(json.loads((folder / "adapter_config.json").read_text()).get("r") or 0)
        except (OSError, ValueError, TypeError):
            return  # the server's own check answers
        if rank > self.max_lora_rank:
            raise InvalidRequest(
                f"{target.requested!r} is a LoRA adapter of rank {rank}; the inference server serves ranks up to "
                f"{self.max_lora_rank} (INFERENCE_MAX_LORA_RANK; start the server with --max-lora-rank {rank} or more)",
                param="model",
                code="adapter_rank_too_large",
            )

    async def forward(
        self,
        path: str,
        body: dict[str, Any],
        target: Target,
        *,
        cache_salt: str | None = None,
        meter: Meter | None = None,
    ) -> JSONResponse | StreamingResponse:
        """Send ``body`` to the server's ``path`` for ``target``, loading its adapter first; the answer (JSON, or an
        SSE stream when ``body["stream"]``) names ``target.requested`` as its model. ``cache_salt`` (one per
        project) replaces any the caller sent; ``meter`` gets the answer's usage after it is sent. Which server serves
        the target's base model is the router's to know (api.inference.router)."""
        payload = {**body, "model": target.adapter or target.base}
        wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        if body.get("stream") and meter is not None:
            payload["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        if cache_salt is not None:
            payload["cache_salt"] = cache_salt
        name = target.adapter
        if name is not None:
            self.slots.acquire(name)  # before anything can await: this process never unloads it under the request
        released = False

        def release() -> None:
            nonlocal released
            if name is not None and not released:
                released = True
                self.slots.release(name)

        try:
            await self.ensure_adapter(target)
            for attempt in (0, 1):
                request = self._http.build_request("POST", path, json=payload)
                try:
                    resp = await self._http.send(request, stream=True)
                except httpx.TransportError as exc:
                    raise self._down(exc) from None
                if resp.status_code == 404 and name is not None and attempt == 0:
                    await resp.aclose()  # the server lost the adapter: load it again, once
                    await self.ensure_adapter(target, reload=True)
                    continue
                if resp.status_code != 200:
                    await resp.aread()
                    await resp.aclose()
                    raise _request_error(resp)
                if body.get("stream"):
                    seen: dict[str, Any] = {}

                    async def done(upstream: httpx.Response = resp, used: dict[str, Any] = seen) -> None:
                        await upstream.aclose()  # also when the client left early
                        release()
                        if meter is not None and used:
                            await meter(used)

                    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
                    stream = _sse(resp, target.requested, seen, keep_usage=wants_usage or meter is None)
                    response = StreamingResponse(
                        stream, media_type="text/event-stream", headers=headers, background=BackgroundTask(done)
                    )
                    released = True  # from here the response's background task releases it
                    return response
                try:
                    data = json.loads(await resp.aread())
                except (httpx.TransportError, ValueError) as exc:
                    raise UpstreamError(f"the inference server's answer could not be read: {exc}") from None
                finally:
                    await resp.aclose()
                if isinstance(data, dict) and "model" in data:
                    data["model"] = target.requested
                usage = data.get("usage") if isinstance(data, dict) else None
                metered = BackgroundTask(meter, usage) if meter is not None and isinstance(usage, dict) else None
                return JSONResponse(data, background=metered)
            raise UpstreamError("the inference server does not answer for the adapter after loading it again")
        finally:
            if not released:
                release()


def _request_error(resp: httpx.Response) -> UpstreamError:
    """The server's refusal of a forwarded request: the caller's fault (bad parameters, too long, too many) keeps
    its status; anything else (our credentials, a lost adapter, a crash) is the service's: 502."""
    status = resp.status_code if resp.status_code in (400, 413, 422, 429) else 502
    return UpstreamError(_upstream_message(resp), status_code=status)


async def _sse(
    resp: httpx.Response, model: str, usage: dict[str, Any], *, keep_usage: bool = True
) -> AsyncIterator[bytes]:
    """The server's SSE events with each chunk's ``model`` replaced by the caller's name; the upstream response is
    closed when the client goes away (the generator is closed) or the stream ends. The last ``usage`` a chunk
    carries is put in ``usage``; with ``keep_usage`` False the usage chunk (no choices) and every chunk's ``usage``
    field are kept from the client, which did not ask for them."""
    try:
        async for line in resp.aiter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                try:
                    chunk = json.loads(line[6:])
                except ValueError:
                    yield (line + "\n").encode()
                    continue
                if isinstance(chunk, dict) and isinstance(chunk.get("usage"), dict):
                    usage.clear()
                    usage.update(chunk["usage"])
                if isinstance(chunk, dict) and not keep_usage and "usage" in chunk:
                    del chunk["usage"]
                    if not chunk.get("choices"):
                        continue  # the usage chunk (its blank separator still passes: an empty event)
                if isinstance(chunk, dict) and "model" in chunk:
                    chunk["model"] = model
                line = "data: " + json.dumps(chunk, separators=(",", ":"))
            yield (line + "\n").encode()
    except httpx.TransportError as exc:  # the server died mid-stream: end with an error event, OpenAI's shape
        error = {"error": {"type": "server_error", "code": "inference_unavailable", "message": str(exc)}}
        yield f"data: {json.dumps(error)}\n\n".encode()
    finally:
        await resp.aclose()
