"""Where each step's batch comes from: sampled in turn (``max_staleness`` 0) or ahead of the trainer (k > 0).

Synchronous (``InTurn``): the step's batch is collected when the trainer asks for it, from the weights it has just
synced: every sample is on-policy, as grpo_core.trainer has always run.

Asynchronous (``Ahead``, bounded staleness): a producer thread collects the batches of the coming steps
(grpo_core.rollout.sampling.collect_batch, graders and all) through an engine in its own process
(grpo_core.sampler_process), while the training thread updates. With the trainer at version v (v
optimizer steps done), the batch of step s may be sampled once v ≥ s − 1 − k, so a batch is never sampled by weights
more than k versions older than the ones it trains; the producer uses the newest weights it has, so in a steady
state it runs exactly as far ahead as sampling is slower than the update allows. Every sample carries its version;
``ReadyBatch`` is checked again when the trainer takes it, and groups older than k would be dropped and counted
(``fresh_groups``): the bound holds even if a batch waited longer than the producer planned.

What a checkpoint holds: the data position after the last *trained* batch (``ReadyBatch.cursor``), never the
producer's. Batches in flight at a pause, a cancel or a crash are discarded; a resumed job samples them again, from
the resumed weights, so no prompt batch is trained twice or skipped.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import torch
from torch import Tensor

from grpo_core.hardware.distributed import World
from grpo_core.rewards.base import Grader
from grpo_core.rollout.agent.episodes import AgentRollouts
from grpo_core.rollout.engines.base import RolloutEngine
from grpo_core.rollout.sampling import PromptCursor, StepBatch, collect_batch, rows_of_groups
from grpo_core.schemas.config import GRPOConfig

WAIT_SECONDS = 1.0  # how often a trainer waiting for a batch checks that the producer thread is alive


def staleness(versions: Tensor, step: int) -> Tensor:
    """(B,) how many optimizer steps behind the policy being trained at ``step`` (1-based: it starts from version
    step − 1) each sample's sampling policy was."""
    return (step - 1) - versions


def fresh_groups(versions: Tensor, step: int, max_staleness: int, group_size: int) -> Tensor:
    """(n_groups,) bool: the groups whose every sample is at most ``max_staleness`` versions old at ``step``; the
    others are dropped (a group is sampled in one call, so its samples share a version)."""
    lag = staleness(versions, step).view(-1, group_size)
    return (lag <= max_staleness).all(dim=1)


def staleness_histogram(versions: Tensor, step: int) -> dict[str, int]:
    """{lag: samples} of a batch, lags as strings (a JSON object's keys), in increasing order."""
    lags, counts = torch.unique(staleness(versions, step), return_counts=True)
    return {str(int(lag)): int(n) for lag, n in zip(lags, counts, strict=True)}


@dataclass
class ReadyBatch:
    """A step's batch and what the trainer records with it."""

    batch: StepBatch
    cursor: int  # the data position after this batch's prompts: what a checkpoint after this step saves
    dropped: int = 0  # samples dropped for being older than max_staleness


class BatchSource(Protocol):
    def next(self, step: int) -> ReadyBatch:
        """The batch that ``step`` (1-based) trains on."""
        ...

    def advance(self, model: Any, version: int) -> None:
        """The trainer finished an optimizer step: ``model`` is policy version ``version``."""
        ...

    def close(self) -> None: ...


@dataclass
class _Job:
    """What collecting a batch needs besides the step (collect_batch's arguments)."""

    cfg: GRPOConfig
    engine: RolloutEngine
    prompts: list[str]
    rows: list[dict[str, Any]]
    graders: Sequence[Grader]
    seed: int
    world: World
    agent: AgentRollouts | None

    def collect(self, cursor: PromptCursor, step: int) -> StepBatch:
        return collect_batch(
            self.cfg,
            self.engine,
            self.prompts,
            self.rows,
            self.graders,
            cursor,
            seed=self.seed,
            step=step,
            world=self.world,
            agent=self.agent,
        )


class InTurn:
    """``max_staleness`` 0: each batch collected when asked for, from the weights synced after the last step."""

    def __init__(self, job: _Job, position: int) -> None:
        self.job = job
        self.cursor = PromptCursor(len(job.rows), job.cfg.batch_size, job.seed, position=position)

    def next(self, step: int) -> ReadyBatch:
        batch = self.job.collect(self.cursor, step)
        return ReadyBatch(batch, self.cursor.position)

    def advance(self, model: Any, version: int) -> None:
        self.job.engine.sync(model, version)

    def close(self) -> None:
        pass


class Ahead:
    """``max_staleness`` k > 0: a producer thread collects batches up to k steps ahead (see the module doc)."""

    def __init__(self, job: _Job, position: int, version: int, total: int) -> None:
        self.job, self.k, self.total = job, job.cfg.max_staleness, total
        self.cursor = PromptCursor(len(job.rows), job.cfg.batch_size, job.seed, position=position)
        self._version = version
        self._ready: queue.Queue[tuple[int, ReadyBatch] | BaseException] = queue.Queue()
        self._turn = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._produce, args=(version + 1,), name="grpo-rollouts", daemon=True)
        self._thread.start()

    def _produce(self, first: int) -> None:
        try:
            for step in range(first, self.total + 1):
                oldest = step - 1 - self.k  # the batch of ``step`` may be sampled by this version or a newer one
                with self._turn:
                    self._turn.wait_for(lambda: self._stopping or self._version >= oldest)  # noqa: B023
                    if self._stopping:
                        return
                batch = self.job.collect(self.cursor, step)
                self._ready.put((step, ReadyBatch(batch, self.cursor.position)))
        except BaseException as e:  # handed to the training thread, which raises it
            if not self._stopping:
                self._ready.put(e)

    def next(self, step: int) -> ReadyBatch:
        while True:
            try:
                item = self._ready.get(timeout=WAIT_SECONDS)
            except queue.Empty:
                if not self._thread.is_alive() and self._ready.empty():
                    raise RuntimeError(f"the rollout producer stopped without a batch for step {step}") from None
                continue
            if isinstance(item, BaseException):
                raise item
            made_for, ready = item
            if made_for != step:
                raise RuntimeError(f"rollout producer out of order: batch of step {made_for} at step {step}")
            return drop_stale(ready, step, self.k, self.job.cfg.group_size)

    def advance(self, model: Any, version: int) -> None:
        self.job.engine.sync(model, version)  # a snapshot: the sampler picks it up at its next call
        with self._turn:
            self._version = version
            self._turn.notify_all()

    def close(self) -> None:
        with self._turn:
            self._stopping = True
            self._turn.notify_all()
        self._thread.join(timeout=0.2)
        if self._thread.is_alive():  # inside a sampler call: stop the sampler rather than wait for the batch
            abort = getattr(self.job.engine, "abort", None)
            if abort is not None:
                abort()
            self._thread.join(timeout=60)


def drop_stale(ready: ReadyBatch, step: int, max_staleness: int, group_size: int) -> ReadyBatch:
    """``ready`` without the groups sampled more than ``max_staleness`` versions before ``step``'s policy, the samples
    dropped counted; a batch left with no group raises (the producer never lets that happen)."""
    b = ready.batch
    versions = b.ro.versions
    if versions is None:
        return ready
    keep = fresh_groups(versions, step, max_staleness, group_size)
    if bool(keep.all()):
        return ready
    if not bool(keep.any()):
        raise RuntimeError(f"every sample of step {step}'s batch is older than max_staleness={max_staleness}")
    groups = torch.nonzero(keep).flatten()
    rows = rows_of_groups(groups, group_size)
    kept = replace(
        b,
        ro=b.ro.select(rows),
        row_idx=[b.row_idx[int(g)] for g in groups],
        scores=b.scores[rows],
        overlong=b.overlong[rows],
        rewards=b.rewards[rows],
        adv=b.adv[rows],
        stats=b.stats.model_copy(update={"groups_trained": len(groups)}),
    )
    return replace(ready, batch=kept, dropped=ready.dropped + int((~keep).sum()) * group_size)


def batch_source(
    cfg: GRPOConfig,
    engine: RolloutEngine,
    prompts: list[str],
    rows: list[dict[str, Any]],
    graders: Sequence[Grader],
    *,
    seed: int,
    world: World,
    agent: AgentRollouts | None,
    position: int,
    version: int,
    total: int,
) -> BatchSource:
    """The job's batches from data position ``position`` with the trainer at ``version`` (its steps done)."""
    job = _Job(cfg, engine, prompts, rows, graders, seed, world, agent)
    if cfg.max_staleness:
        return Ahead(job, position, version, total)
    return InTurn(job, position)
