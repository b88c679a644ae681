"""What a training-API session keeps on its worker between calls, and one answer per request type.

A session's point is what stays resident: each training run's ``TrainingModel`` (its base model, adapter and
optimizer state, grpo_core.training_api.model) lives here from ``create_model`` until the session ends, so a
client's ``forward_backward`` and ``optim_step`` cost what the computation costs. Beside the runs:

- ``live``: a ``Sampler`` over a run's own resident weights, for a sampling client saved from the run while the run
  has not moved on since;
- ``snapshots``: the newest ``MAX_SNAPSHOTS`` unnamed saves (``save_weights_and_get_sampling_client``: an RL loop
  makes one per step), each the run's adapter on this worker's disk;
- ``loaded``: samplers with a model of their own (a snapshot whose run moved on, a sampler checkpoint from the store,
  the base model), the ``MAX_LOADED_SAMPLERS`` most recently used.

Each ``answer`` takes one typed request (runtime.training_api.Request) and returns the typed result of the same kind;
the worker never shapes the SDK's wire (the API does, api.training_api.futures). A user's mistake found here (a
token beyond the vocabulary, a sampling client whose weights are gone) is a ``UserError``.
"""

from __future__ import annotations

import shutil
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from grpo_core.errors import UserError
from runtime import training_api as tc
from runtime.storage import ObjectStore
from worker.checkpoints import Pack, pack_adapter, pack_checkpoint, unpack, upload
from worker.settings import WorkerSettings

if TYPE_CHECKING:
    from grpo_core.training_api.model import ForwardResult, TrainingModel
    from grpo_core.training_api.sampling import SampleCall, SampleOutput, Sampler
    from grpo_core.training_api.shared import SharedBases
    from grpo_core.training_api.together import Call

# An RL loop makes a sampling client per step (save_weights_and_get_sampling_client): the newest this many keep
# their weights on the worker's disk; sampling an older one is an error that says to name the save instead.
MAX_SNAPSHOTS = 8
# Sampling clients whose weights are not a resident run's each load a model of their own: this many stay loaded.
MAX_LOADED_SAMPLERS = 2


class Resident:
    """The models and samplers of one session on this worker, and the scratch folder ``work`` they use."""

    def __init__(
        self, settings: WorkerSettings, store: ObjectStore, work: Path, shared: SharedBases | None = None
    ) -> None:
        from grpo_core.training_api.shared import SharedBases

        self.settings, self.store, self.work = settings, store, work
        # the base models resident for training runs: one per base and adapter shape, shared by this session's runs
        # and, in a pool (worker.training_api.pool), by the other sessions' runs on this worker
        self.shared = shared if shared is not None else SharedBases()
        self.runs: dict[str, TrainingModel] = {}  # training run id -> its model
        self.live: dict[str, Sampler] = {}  # run id -> a Sampler of its resident weights
        self.loaded: OrderedDict[str, Sampler] = OrderedDict()  # sampling client -> Sampler with its own model (LRU)
        # unnamed saves: sampling client -> (run, its version then, adapter folder), the newest MAX_SNAPSHOTS
        self.snapshots: OrderedDict[str, tuple[str, int, Path]] = OrderedDict()
        self.bases: dict[str, Path] = {}

    def answer(self, request: tc.Request, target: str) -> tc.Result:
        """The result of ``request`` on ``target`` (the training run or sampling client it names)."""
        match request:
            case tc.CreateModel():
                self._new_run(target, request)
                return tc.CreateModelResult()
            case tc.LoadWeights():
                return self.load_weights(request, target)
            case tc.ForwardBackward():
                return self.forward_backward(request, target)
            case tc.OptimStep():
                return self.optim_step(request, target)
            case tc.SaveWeights():
                return self.save_weights(request, target)
            case tc.SaveForSampler():
                return self.save_for_sampler(request, target)
            case tc.Sample():
                return self.sample(request)

    # -- training runs
    def load_weights(self, request: tc.LoadWeights, target: str) -> tc.LoadWeightsResult:
        model = self._new_run(target, request.create) if request.create is not None else self._run(target)
        folder = self._fetch(request.object_key, f"load-{uuid.uuid4().hex[:8]}")
        try:
            model.load_state(folder, optimizer=request.optimizer)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return tc.LoadWeightsResult()

    def forward_backward(self, request: tc.ForwardBackward, target: str) -> tc.ForwardBackwardResult:
        return fb_result(self.fb_call(request, target).alone())

    def fb_call(self, request: tc.ForwardBackward, target: str) -> Call:
        """``request`` as a call of its run (which may share passes with other runs', forward_backward_jointly)."""
        from grpo_core.training_api.spec import Datum
        from grpo_core.training_api.together import Call

        data = [Datum(tokens=d.tokens, inputs=d.inputs) for d in request.data]
        return Call(self._run(target), data, request.loss_fn, request.config, backward=not request.forward_only)

    def optim_step(self, request: tc.OptimStep, target: str) -> tc.OptimStepResult:
        a = request.adam
        metrics = self._run(target).optim_step(
            a.learning_rate, a.beta1, a.beta2, a.eps, a.weight_decay, a.grad_clip_norm
        )
        return tc.OptimStepResult(metrics=dict(metrics))

    def save_weights(self, request: tc.SaveWeights, target: str) -> tc.SaveWeightsResult:
        folder = self._run(target).save_state(self.work / f"save-{uuid.uuid4().hex[:8]}")
        size = self._upload(folder, request.to.object_key, pack_checkpoint)  # weights and optimizer: load_state's
        return tc.SaveWeightsResult(size_bytes=size)

    def save_for_sampler(self, request: tc.SaveForSampler, target: str) -> tc.SaveForSamplerResult:
        model = self._run(target)
        if request.to is not None:  # named: a PEFT adapter in the store (sampling clients, serving, download)
            folder = model.save_adapter(self.work / f"adapter-{uuid.uuid4().hex[:8]}")
            size = self._upload(folder, request.to.object_key, pack_adapter)  # the files a job's adapter tar holds
            return tc.SaveForSamplerResult(size_bytes=size)
        if request.sampler_id is None:
            raise UserError("save_weights_for_sampler needs a path or a sampling client")
        # unnamed: the run's weights as they are now, for a sampling client of this session; sampled from the
        # live model while it has not moved on, from this copy after
        folder = model.save_adapter(self.work / "snapshots" / request.sampler_id.replace(":", "_"))
        self._keep_snapshot(request.sampler_id, target, model.version, folder)
        return tc.SaveForSamplerResult()

    def _run(self, run_id: str) -> TrainingModel:
        model = self.runs.get(run_id)
        if model is None:
            raise UserError(f"training run {run_id} is not on this session's worker (its creation failed)")
        return model

    def _new_run(self, run_id: str, create: tc.CreateModel) -> TrainingModel:
        from grpo_core.training_api.model import TrainingModel

        old, sampler = self.runs.pop(run_id, None), self.live.pop(run_id, None)
        if sampler is not None:
            sampler.close()
        if old is not None:
            old.close()
        from worker.job import adapter_base

        self.runs[run_id] = TrainingModel(
            self._base_dir(create.base),
            rank=create.rank,
            seed=create.seed,
            device="auto",
            precision=self.settings.training_precision,
            train_mlp=create.train_mlp,
            train_attn=create.train_attn,
            shared=self.shared,
            exact=create.exact,
            base_name=adapter_base(create.base.source),  # as a job's adapter names it: both may share one base
        )
        return self.runs[run_id]

    def _base_dir(self, spec: tc.ModelSpec) -> Path:
        from worker.job import base_model_dir

        if spec.id not in self.bases:
            self.bases[spec.id] = base_model_dir(self.settings, self.store, spec.id, spec.source)
        return self.bases[spec.id]

    # -- sampling
    def sample(self, request: tc.Sample) -> tc.SampleResult:
        result = self.sample_many([request])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def sample_many(self, requests: list[tc.Sample]) -> list[tc.SampleResult | Exception]:
        """Each request's result, or the exception that failed it alone: the requests that can share a decode
        share one (``sample_jointly``)."""
        return sample_jointly([(self, requests)])[0]

    def calls(self, requests: list[tc.Sample]) -> list[tuple[Sampler | Exception, SampleCall]]:
        """Each request's sampler (or why it has none: its weights are gone) and its call."""
        from grpo_core.training_api.sampling import SampleCall

        out: list[tuple[Sampler | Exception, SampleCall]] = []
        samplers: dict[str, Sampler | Exception] = {}
        for r in requests:
            if r.sampler.id not in samplers:
                try:
                    samplers[r.sampler.id] = self._sampler(r.sampler)
                except Exception as exc:  # this client's requests fail together; others go on
                    samplers[r.sampler.id] = exc
            call = SampleCall(
                r.prompt, r.num_samples, r.max_tokens, r.temperature, r.top_p, r.seed, r.stop, r.prompt_logprobs
            )
            out.append((samplers[r.sampler.id], call))
        return out

    def _sampler(self, spec: tc.SamplerSpec) -> Sampler:
        """What samples for sampling client ``spec``: the resident run itself while its weights are the ones the
        client was saved from, else a model of its own (the saved snapshot, a sampler checkpoint, the base)."""
        from grpo_core.training_api.sampling import Sampler

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

    def _load(self, sampler_id: str, base: tc.ModelSpec, adapter: Path | None) -> Sampler:
        """A sampler with a model of its own, kept among the MAX_LOADED_SAMPLERS most recently used."""
        from grpo_core.training_api.sampling import Sampler

        if sampler_id in self.loaded:
            self.loaded.move_to_end(sampler_id)
            return self.loaded[sampler_id]
        while len(self.loaded) >= MAX_LOADED_SAMPLERS:
            self.loaded.popitem(last=False)[1].close()
        self.loaded[sampler_id] = Sampler.load(
            self._base_dir(base), adapter, device="auto", precision=self.settings.training_precision
        )
        return self.loaded[sampler_id]

    def _keep_snapshot(self, sampler_id: str, run_id: str, version: int, folder: Path) -> None:
        self.snapshots[sampler_id] = (run_id, version, folder)
        while len(self.snapshots) > MAX_SNAPSHOTS:
            old, (_, _, old_folder) = self.snapshots.popitem(last=False)
            shutil.rmtree(old_folder, ignore_errors=True)
            dropped = self.loaded.pop(old, None)
            if dropped is not None:
                dropped.close()

    # -- the store
    def _fetch(self, key: str, name: str) -> Path:
        """The tar at ``key`` unpacked into a fresh scratch folder ``name``."""
        shutil.rmtree(self.work / name, ignore_errors=True)
        return unpack(self.store, key, self.work / name)

    def _upload(self, folder: Path, key: str, pack: Pack) -> int:
        """``folder`` uploaded to ``key`` as a job's checkpoints are (worker.checkpoints); its tar's size. The folder
        is removed."""
        try:
            return upload(self.store, key, folder, pack)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def free(self, release_cache: bool = True) -> None:
        """Drop every model and sampler, hand their device memory back, remove the scratch files; and with
        ``release_cache``, this process's hold on the cached base model files (a pool releases them at its end)."""
        from grpo_core.hardware.device import release_device_memory
        from worker.job import model_cache

        for sampler in [*self.live.values(), *self.loaded.values()]:
            sampler.close()
        for model in self.runs.values():
            model.close()
        self.live.clear()
        self.loaded.clear()
        self.runs.clear()
        release_device_memory()
        shutil.rmtree(self.work, ignore_errors=True)
        if release_cache:
            model_cache(self.settings).release_all()


def _sample_result(out: SampleOutput) -> tc.SampleResult:
    sequences = [
        tc.SampledSequence(tokens=s.tokens, logprobs=list(s.logprobs), stop_reason=s.stop_reason) for s in out.sequences
    ]
    return tc.SampleResult(sequences=sequences, prompt_logprobs=out.prompt_logprobs, decoded_with=out.decoded_with)


def sample_jointly(work: list[tuple[Resident, list[tc.Sample]]]) -> list[list[tc.SampleResult | Exception]]:
    """The sample requests of one or several sessions on this worker (each with its Resident), decoded together
    where they can be (grpo_core.training_api.batched.sample_jointly: calls of several runs on one shared base in
    one decode, a run's own calls on its sampler); each request's result or the exception that failed it alone,
    by session."""
    from grpo_core.training_api.batched import sample_jointly as decode_jointly

    parts = [part for resident, requests in work for part in resident.calls(requests)]
    results: list[SampleOutput | Exception | None] = [s if isinstance(s, Exception) else None for s, _ in parts]
    ready = [(i, sampler, call) for i, (sampler, call) in enumerate(parts) if not isinstance(sampler, Exception)]
    decoded = decode_jointly([(sampler, call) for _, sampler, call in ready])
    for (i, _, _), out in zip(ready, decoded, strict=True):
        results[i] = out
    flat = [r if isinstance(r, Exception) else _sample_result(r) for r in results if r is not None]
    by_session, start = [], 0
    for _, requests in work:
        by_session.append(flat[start : start + len(requests)])
        start += len(requests)
    return by_session


def fb_result(out: ForwardResult) -> tc.ForwardBackwardResult:
    return tc.ForwardBackwardResult(logprobs=list(out.logprobs), metrics=dict(out.metrics))


def forward_backward_jointly(
    work: list[tuple[Resident, str, tc.ForwardBackward]],
) -> list[tuple[tc.ForwardBackwardResult | Exception, float]]:
    """The forward_backward requests of several sessions on this worker (each with its Resident and its target
    run), in passes shared by the runs that can share them (grpo_core.training_api.together); each request's result
    or the exception that failed it alone, and the device seconds it caused."""
    from grpo_core.training_api.together import forward_backward_jointly as compute

    out: list[tuple[tc.ForwardBackwardResult | Exception, float] | None] = [None] * len(work)
    calls: list[tuple[int, Call]] = []
    for i, (resident, target, request) in enumerate(work):
        try:
            calls.append((i, resident.fb_call(request, target)))
        except Exception as exc:  # its run is not on this worker: it fails alone
            out[i] = (exc, 0.0)
    for (i, _), (result, seconds) in zip(calls, compute([c for _, c in calls]), strict=True):
        out[i] = (result if isinstance(result, Exception) else fb_result(result), seconds)
    assert all(o is not None for o in out), "every request answered"
    return [o for o in out if o is not None]
