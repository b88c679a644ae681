"""A training-API session on this worker, as glue: claim it, take its requests in order from the API, run each on
grpo_core.primitives (a resident TrainingModel per training run, a Sampler per sampling client), post the result,
and hand the session back when its client closes it or it has been idle too long.

What stays resident is the point of a session: each run's model and optimizer state live here between calls, so
a client's ``forward_backward`` and ``optim_step`` cost what the computation costs. The price is that a session's
unsaved state lives only here: when this process dies the reaper marks the session lost and fails its open
requests (api.training.leases.reap), and the client restores from its last ``save_state``.

A lease like a job's: a thread renews it every third of ``lease_seconds`` while a request runs (a long
forward/backward is not a lost worker), and a refused renewal (the session was taken from us) stops the loop.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grpo_core.errors import UserError
from runtime import training_contract as tc
from runtime.storage import make_store
from worker.client import InternalClient, StaleLease
from worker.reporting import pack_adapter, pack_checkpoint, unpack
from worker.settings import WorkerSettings

log = logging.getLogger(__name__)
NEXT_WAIT_SECONDS = 10.0  # how long one ask for the next request may be held open by the API
# An RL loop makes a sampling client per step (save_weights_and_get_sampling_client): the newest this many keep
# their weights on the worker's disk; sampling an older one is an error that says to name the save instead.
MAX_SNAPSHOTS = 8
# Sampling clients whose weights are not a resident run's each load a model of their own: this many stay loaded.
MAX_LOADED_SAMPLERS = 2


class SessionRunner:
    def __init__(self, session_id: str, settings: WorkerSettings) -> None:
        self.session_id = session_id
        self.settings = settings
        self.client = InternalClient(settings.api_url, settings.internal_token)
        self.store = make_store(settings)
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}"
        self.claim_id = uuid.uuid4().hex
        self.work = settings.scratch_dir / "training" / session_id / self.claim_id[:8]
        self.runs: dict[str, Any] = {}  # run id -> grpo_core.primitives.model.TrainingModel
        self.live: dict[str, Any] = {}  # run id -> a Sampler of its resident weights
        self.loaded: OrderedDict[str, Any] = OrderedDict()  # sampling client -> Sampler with a model of its own (LRU)
        # unnamed saves: sampling client -> (run, its version then, adapter folder), the newest MAX_SNAPSHOTS
        self.snapshots: OrderedDict[str, tuple[str, int, Path]] = OrderedDict()
        self.bases: dict[str, Path] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            claim = self.client.training_claim(
                self.session_id, tc.Claim(worker_id=self.worker_id, claim_id=self.claim_id)
            )
        except StaleLease as exc:
            log.info("session %s not claimed: %s", self.session_id, exc)
            return
        self.work.mkdir(parents=True, exist_ok=True)
        renew = threading.Thread(target=self._renew, args=(claim.lease_seconds,), daemon=True)
        renew.start()
        reason, message = "error", None
        try:
            reason = self._serve(claim.idle_timeout_seconds)
        except StaleLease as exc:  # the reaper found our lease expired and the session lost: nothing more to write
            log.info("session %s stopped: %s", self.session_id, exc)
            reason = ""
        except Exception as exc:
            log.exception("session %s failed", self.session_id)
            message = f"{type(exc).__name__}: {exc}"
        finally:
            self.stopped.set()
            self.free()
            if reason:
                try:
                    self.client.training_release(
                        self.session_id, tc.Release(claim_id=self.claim_id, reason=reason, message=message)
                    )
                except Exception:  # the reaper marks it lost when its lease expires
                    log.exception("session %s: could not hand it back", self.session_id)
            self.client.close()

    def _serve(self, idle_timeout: int) -> str:
        """Serve requests until the client closes the session ("finished") or none comes for ``idle_timeout``
        seconds ("idle")."""
        idle_since = time.monotonic()
        while not self.stopped.is_set():
            left = idle_timeout - (time.monotonic() - idle_since)
            if left <= 0:
                log.info("session %s idle for %d s: handing it back", self.session_id, idle_timeout)
                return "idle"
            ask = tc.NextRequest(claim_id=self.claim_id, wait_seconds=min(NEXT_WAIT_SECONDS, max(left, 0.1)))
            answer = self.client.training_next(self.session_id, ask)
            if answer.stop is not None:
                return "finished"
            if answer.request is None:
                continue
            post = self.execute(answer.request)
            ack = self.client.training_result(self.session_id, answer.request.id, post)
            if ack.stop is not None:
                return "finished"
            idle_since = time.monotonic()
        return "finished"

    def _renew(self, lease_seconds: int) -> None:
        while not self.stopped.wait(max(lease_seconds / 3, 1)):
            try:
                if self.client.training_heartbeat(self.session_id, tc.Fenced(claim_id=self.claim_id)).stop:
                    return  # finished: the main loop learns it at its next call
            except StaleLease:
                self.stopped.set()
                return
            except Exception:
                log.exception("session %s: lease renewal failed (retrying)", self.session_id)

    def execute(self, item: tc.WorkItem) -> tc.ResultPost:
        """Run one request; a user's mistake the API could not see (a token beyond the vocabulary) fails it as
        ``user``, anything else as ``server``; the session goes on either way."""
        from grpo_core.primitives import spec

        started = time.perf_counter()
        try:
            result = getattr(self, f"_{item.kind.value}")(item)
        except (UserError, spec.BatchError) as exc:
            return tc.ResultPost(claim_id=self.claim_id, error=tc.RequestError(message=str(exc), category="user"))
        except Exception as exc:
            log.exception("session %s: %s %s failed", self.session_id, item.kind, item.id)
            error = tc.RequestError(message=f"{item.kind} failed on the worker: {type(exc).__name__}: {exc}")
            return tc.ResultPost(claim_id=self.claim_id, error=error)
        log.info("session %s: %s in %.2f s", self.session_id, item.kind, time.perf_counter() - started)
        return tc.ResultPost(claim_id=self.claim_id, result=result)

    # -- the models
    def _base_dir(self, spec: tc.ModelSpec) -> Path:
        from worker.job import base_model_dir

        if spec.id not in self.bases:
            self.bases[spec.id] = base_model_dir(self.settings, self.store, spec.id, spec.source)
        return self.bases[spec.id]

    def _run(self, item: tc.WorkItem) -> Any:
        model = self.runs.get(item.target or "")
        if model is None:
            raise UserError(f"training run {item.target} is not on this session's worker (its creation failed)")
        return model

    def _new_run(self, run_id: str, create: tc.CreateModel) -> Any:
        from grpo_core.primitives.model import TrainingModel

        old, sampler = self.runs.pop(run_id, None), self.live.pop(run_id, None)
        if sampler is not None:
            sampler.close()
        if old is not None:
            old.close()
        self.runs[run_id] = TrainingModel(
            self._base_dir(create.base),
            rank=create.rank,
            seed=create.seed,
            device="auto",
            precision="auto",
            train_mlp=create.train_mlp,
            train_attn=create.train_attn,
        )
        return self.runs[run_id]

    def _fetch(self, key: str, name: str) -> Path:
        """The tar at ``key`` unpacked into a fresh scratch folder ``name``."""
        shutil.rmtree(self.work / name, ignore_errors=True)
        return unpack(self.store, key, self.work / name)

    def _upload(self, folder: Path, key: str, pack: Callable[[Path, Path], Path]) -> int:
        """``folder`` packed (worker.reporting's ``pack_adapter`` or ``pack_checkpoint``, as a job's checkpoints
        are) and put at ``key``; its size in bytes. The folder and the tar are removed."""
        tar_path = pack(folder, folder.with_suffix(".tar"))
        try:
            size = tar_path.stat().st_size
            self.store.put_file(key, tar_path)
        finally:
            tar_path.unlink(missing_ok=True)
            shutil.rmtree(folder, ignore_errors=True)
        return size

    # -- one method per request kind (runtime.training_contract.RequestKind); each answers in the SDK's shape
    def _create_model(self, item: tc.WorkItem) -> dict[str, Any]:
        self._new_run(item.target or "", tc.CreateModel.model_validate(item.payload))
        return {"model_id": item.target, "type": "create_model"}

    def _load_weights(self, item: tc.WorkItem) -> dict[str, Any]:
        body = tc.LoadWeights.model_validate(item.payload)
        model = self._new_run(item.target or "", body.create) if body.create is not None else self._run(item)
        folder = self._fetch(body.object_key, f"load-{item.id}")
        model.load_state(folder, optimizer=body.optimizer)
        shutil.rmtree(folder, ignore_errors=True)
        return {"model_id": item.target, "type": "load_weights"}

    def _forward_backward(self, item: tc.WorkItem) -> dict[str, Any]:
        from grpo_core.primitives.spec import Datum

        body = tc.ForwardBackward.model_validate(item.payload)
        data = [Datum(tokens=d.tokens, inputs=d.inputs) for d in body.data]
        out = self._run(item).forward_backward(data, body.loss_fn, body.config, backward=not body.forward_only)
        return {"logprobs": out.logprobs, "metrics": out.metrics}

    def _optim_step(self, item: tc.WorkItem) -> dict[str, Any]:
        adam = tc.OptimStep.model_validate(item.payload).adam
        metrics = self._run(item).optim_step(
            adam.learning_rate, adam.beta1, adam.beta2, adam.eps, adam.weight_decay, adam.grad_clip_norm
        )
        return {"metrics": metrics, "type": "optim_step"}

    def _save_weights(self, item: tc.WorkItem) -> dict[str, Any]:
        to = tc.SaveWeights.model_validate(item.payload).to
        folder = self._run(item).save_state(self.work / f"save-{item.id}")
        size = self._upload(folder, to.object_key, pack_checkpoint)  # weights and optimizer: load_state's
        return {"path": to.tinker_path, "size_bytes": size, "type": "save_weights"}

    def _save_weights_for_sampler(self, item: tc.WorkItem) -> dict[str, Any]:
        body = tc.SaveForSampler.model_validate(item.payload)
        model = self._run(item)
        if body.to is not None:  # named: a PEFT adapter in the store (sampling clients, serving, download)
            folder = model.save_adapter(self.work / f"adapter-{item.id}")
            size = self._upload(folder, body.to.object_key, pack_adapter)  # the files a job's adapter tar holds
            return {"path": body.to.tinker_path, "size_bytes": size, "type": "save_weights_for_sampler"}
        assert body.sampler_id is not None
        # unnamed: the run's weights as they are now, for a sampling client of this session; sampled from the
        # live model while it has not moved on, from this copy after
        folder = model.save_adapter(self.work / "snapshots" / body.sampler_id.replace(":", "_"))
        self._keep_snapshot(body.sampler_id, item.target or "", model.version, folder)
        return {"sampling_session_id": body.sampler_id, "type": "save_weights_for_sampler"}

    def _keep_snapshot(self, sampler_id: str, run_id: str, version: int, folder: Path) -> None:
        self.snapshots[sampler_id] = (run_id, version, folder)
        while len(self.snapshots) > MAX_SNAPSHOTS:
            old, (_, _, old_folder) = self.snapshots.popitem(last=False)
            shutil.rmtree(old_folder, ignore_errors=True)
            dropped = self.loaded.pop(old, None)
            if dropped is not None:
                dropped.close()

    def _load(self, sampler_id: str, base: tc.ModelSpec, adapter: Path | None) -> Any:
        """A sampler with a model of its own, kept among the MAX_LOADED_SAMPLERS most recently used."""
        from grpo_core.primitives.sampling import Sampler

        if sampler_id in self.loaded:
            self.loaded.move_to_end(sampler_id)
            return self.loaded[sampler_id]
        while len(self.loaded) >= MAX_LOADED_SAMPLERS:
            self.loaded.popitem(last=False)[1].close()
        self.loaded[sampler_id] = Sampler.load(self._base_dir(base), adapter, device="auto", precision="auto")
        return self.loaded[sampler_id]

    def _sampler(self, spec: tc.SamplerSpec) -> Any:
        """What samples for sampling client ``spec``: the resident run itself while its weights are the ones the
        client was saved from, else a model of its own (the saved snapshot, a sampler checkpoint, the base)."""
        from grpo_core.primitives.sampling import Sampler

        if spec.snapshot_of is not None:
            snap = self.snapshots.get(spec.id)
            if snap is None:
                raise UserError(
                    f"sampling client {spec.id}'s weights are gone: the worker keeps the newest {MAX_SNAPSHOTS} "
                    "unnamed saves; keep older ones with save_weights_for_sampler(name)"
                )
            run_id, version, folder = snap
            live = self.runs.get(run_id)
            if live is not None and live.version == version:
                if run_id not in self.live:
                    self.live[run_id] = Sampler.for_training(live)
                return self.live[run_id]
            return self._load(spec.id, spec.base, folder)
        if spec.adapter_key is None or spec.id in self.loaded:
            return self._load(spec.id, spec.base, None)
        adapter = self._fetch(spec.adapter_key, f"sampler-{uuid.uuid4().hex[:8]}")
        try:
            return self._load(spec.id, spec.base, adapter)
        finally:
            shutil.rmtree(adapter, ignore_errors=True)  # loaded: fetched again if it is ever evicted

    def _sample(self, item: tc.WorkItem) -> dict[str, Any]:
        body = tc.Sample.model_validate(item.payload)
        out = self._sampler(body.sampler).sample(
            body.prompt,
            body.num_samples,
            body.max_tokens,
            body.temperature,
            body.top_p,
            body.seed,
            body.stop,
            body.prompt_logprobs,
        )
        sequences = [{"tokens": s.tokens, "logprobs": s.logprobs, "stop_reason": s.stop_reason} for s in out.sequences]
        return {"sequences": sequences, "prompt_logprobs": out.prompt_logprobs}

    def free(self) -> None:
        """Drop every model and sampler of the session, hand their device memory back, remove its scratch files."""
        from grpo_core.hardware.device import release_device_memory

        for sampler in [*self.live.values(), *self.loaded.values()]:
            sampler.close()
        for model in self.runs.values():
            model.close()
        self.live.clear()
        self.loaded.clear()
        self.runs.clear()
        release_device_memory()
        shutil.rmtree(self.work, ignore_errors=True)
        from worker.job import model_cache

        model_cache(self.settings).release_all()
