"""The merged engine in a process of its own, so that sampling runs while the trainer updates (``max_staleness`` > 0).

The child loads the base model from the job's model folder itself and builds a ``MergedEngine`` on it; after each
optimizer step it receives the adapter's trainable tensors (the LoRA A and B matrices: a few MB, never the base
weights) and re-merges them. On a CPU the child runs on its own cores (``os.sched_setaffinity``) with its own torch
threads, and the trainer keeps the rest; on a GPU it is a second CUDA context on the trainer's device, or the only one
on a device of its own (grpo_core.hardware.rollout_placement).

``SamplerProcess`` is a ``RolloutEngine`` (grpo_core.rollout.engines.base) that any thread may call; calls are
serialised. ``sync`` only records a snapshot of the adapter (the trainer never waits for the sampler); the next call
from any thread sends the newest snapshot first. Every rollout comes back stamped with the version (optimizer steps)
of the weights that sampled it (``Rollout.versions``).

Faults: a child that dies (killed, out of memory) is started again, up to ``RESTARTS`` times per job, synced to the
newest snapshot, and the call that was in flight is made again: its rollout is regenerated, nothing is half-used. A
training process that dies takes the child with it: the child's end of the pipe reads end-of-file and it exits.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch

from grpo_core.hardware.device import HOST
from grpo_core.hardware.rollout_placement import RolloutPlacement
from grpo_core.rollout.batch import Rollout
from grpo_core.rollout.engines.base import Sampling
from grpo_core.schemas.config import GRPOConfig

RESTARTS = 3  # child deaths tolerated per job before the job fails with the child's exit code
POLL_SECONDS = 0.5  # how often a caller waiting for the child checks that it is alive


class SamplerDied(RuntimeError):
    """The sampler process exited more than ``RESTARTS`` times."""


@dataclass(frozen=True)
class SamplerSpec:
    """What the child needs to build the engine the trainer would have built in-process (grpo_core.policy)."""

    model_dir: Path
    cfg: GRPOConfig  # device, precision and engine resolved
    seed: int
    base_name: str | None
    autocast: torch.dtype | None
    episode_tokens: int
    rollout: tuple[int, int] | None
    threads: int  # torch's CPU threads in the child
    cores: tuple[int, ...] | None  # the CPUs the child runs on; None: wherever the OS puts it (a GPU job)
    own_device: bool = False  # the device is the sampler's alone (resources.rollout_devices)

    def where(self) -> str:
        """The words of ``Execution.sampler``."""
        own = ", a device of its own" if self.own_device else ""
        if self.cores is None:
            return f"its own process on {self.cfg.device}{own}"
        cores = ",".join(str(c) for c in self.cores)
        return f"its own process, {self.threads} thread{'s' * (self.threads > 1)} (CPU {cores}){own}"


def sampler_spec(
    cfg: GRPOConfig,
    model_dir: Path,
    seed: int,
    base_name: str | None,
    autocast: torch.dtype | None,
    episode_tokens: int,
    rollout: tuple[int, int] | None,
    where: RolloutPlacement,
) -> SamplerSpec:
    """The sampler process of a job whose ``cfg`` is resolved, placed at ``where`` (its device and cores:
    grpo_core.hardware.rollout_placement)."""
    cfg = cfg.model_copy(update={"device": str(where.device)})
    return SamplerSpec(
        model_dir, cfg, seed, base_name, autocast, episode_tokens, rollout, where.threads, where.cores, where.own_device
    )


def adapter_state(model: Any) -> dict[str, torch.Tensor]:
    """The policy's trainable tensors (the adapter), copied to the host: what the child needs after a step."""
    return {n: p.detach().to(HOST, copy=True) for n, p in model.named_parameters() if p.requires_grad}


class SamplerProcess:
    """A ``RolloutEngine`` whose merged engine lives in a child process (see the module doc)."""

    name = "merged"

    def __init__(self, spec: SamplerSpec, model: Any, version: int) -> None:
        """Start the child; ``model``'s adapter at ``version`` is what the first call samples from."""
        self.spec = spec
        self._lock = threading.Lock()
        self._latest = (adapter_state(model), version)
        self._child_version: int | None = None
        self.restarts = 0
        self.notes: list[str] = []  # what the job's event log should say (a restart): engine_notes takes them
        self._closed = False
        try:
            self._start()
        except _ChildExited as e:
            raise SamplerDied(
                f"the sampler process exited while it loaded the model (exit code {e.code}; its error is in the "
                "worker's log)"
            ) from None

    def _start(self) -> None:
        """A fresh interpreter (not multiprocessing: a Celery pool process, where a one-device job trains, is
        daemonic and may not have multiprocessing children; and a fork would copy the trainer's threads and CUDA
        state), talking over a socket pair in multiprocessing's framing."""
        ours, theirs = socket.socketpair()
        fd = theirs.fileno()
        cmd = [sys.executable, "-m", __name__, str(fd)]
        self._proc = subprocess.Popen(cmd, pass_fds=(fd,), stdin=subprocess.DEVNULL)
        theirs.close()  # the child holds the only other end: its death reads as end-of-file here
        self._conn = Connection(ours.detach())
        self._child_version = None
        self._rpc(("spec", self.spec))

    def sync(self, model: Any, step: int) -> None:
        """Record ``model``'s adapter as version ``step``; the next call sends it to the child."""
        self._latest = (adapter_state(model), step)

    def generate(self, prompts: list[str], sampling: Sampling) -> Rollout:
        ro, version = self._call("generate", prompts, sampling)
        assert isinstance(ro, Rollout)
        return replace(ro, versions=torch.full((len(ro.texts),), version, dtype=torch.long, device=HOST))

    def continue_turns(
        self, sequences: list[list[int]], sampling: Sampling, rows: list[int]
    ) -> list[tuple[list[int], list[float] | None]]:
        out, _ = self._call("continue_turns", sequences, sampling, rows)
        return list(out)

    def suspend(self) -> None:
        """Nothing to free in the training process: the sampler's memory is the child's."""

    def abort(self) -> None:
        """Stop the child now, from any thread, even while another thread waits in a call (which then raises
        ``SamplerDied``): how a pause or a cancel stops sampling that is no longer wanted."""
        self._closed = True
        if self._proc.poll() is None:
            self._proc.terminate()

    def close(self) -> None:
        self._closed = True
        with self._lock:
            with contextlib.suppress(OSError, ValueError):  # a child already gone
                _send(self._conn, ("close",))
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5)
            self._conn.close()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _call(self, method: str, *args: Any) -> tuple[Any, int]:
        """``engine.method(*args)`` in the child, on the newest adapter; (result, version that computed it)."""
        with self._lock:
            while True:
                if self._closed:  # also after a restart: abort() may have run while it started
                    raise SamplerDied("the sampler process was stopped")
                try:
                    if self._proc.poll() is not None:  # died between calls, or a restart is due
                        raise _ChildExited(self._proc.returncode)
                    state, version = self._latest
                    if self._child_version != version:
                        self._rpc(("sync", state, version))
                        self._child_version = version
                    result, _ = self._rpc(("call", method, args))
                    return result, version
                except _ChildExited as e:
                    if self._closed:
                        raise SamplerDied("the sampler process was stopped") from None
                    if self.restarts >= RESTARTS:
                        raise SamplerDied(
                            f"the sampler process exited {self.restarts + 1} times (last exit code {e.code}); "
                            "the job stops here and resumes from its last checkpoint when retried"
                        ) from None
                    self.restarts += 1
                    self.notes.append(
                        f"The sampler process exited (exit code {e.code}) and was started again "
                        f"({self.restarts} of {RESTARTS} restarts); the rollout in flight is sampled again."
                    )
                    self._conn.close()
                    with contextlib.suppress(_ChildExited):  # a failed start is the next turn's exit
                        self._start()

    def _rpc(self, message: tuple[Any, ...]) -> Any:
        try:
            _send(self._conn, message)
            while not self._conn.poll(POLL_SECONDS):
                if self._proc.poll() is not None:
                    raise _ChildExited(self._proc.returncode)
            kind, payload = _recv(self._conn)
        except (EOFError, OSError):
            try:
                code: int | None = self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                code = self._proc.wait()
            raise _ChildExited(code) from None
        if kind == "error":
            raise payload
        return payload


def _send(conn: Connection, message: Any) -> None:
    """Plain pickles over the socket: ``Connection.send`` would use torch's multiprocessing reductions, which hand a
    tensor over as a shared-memory descriptor through multiprocessing's resource sharer, and that authenticates with
    a key this separately started interpreter does not share."""
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def _recv(conn: Connection) -> Any:
    return pickle.loads(conn.recv_bytes())


class _ChildExited(Exception):
    def __init__(self, code: int | None) -> None:
        super().__init__(f"exit code {code}")
        self.code = code


def _serve(conn: Connection) -> None:
    """The child's loop: the spec first, then build the engine and answer ``sync`` / ``call`` until ``close`` or the
    parent's end closes."""
    _die_with_parent()
    try:
        kind, spec = _recv(conn)
    except (EOFError, OSError):
        return
    assert kind == "spec" and isinstance(spec, SamplerSpec)
    if spec.cores is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, spec.cores)
    torch.set_num_threads(spec.threads)
    if spec.cfg.device.startswith("cuda"):  # graph capture and its memory pool follow the current device
        torch.cuda.set_device(torch.device(spec.cfg.device))
    from grpo_core.policy import load_policy, start_engine

    model, tokenizer = load_policy(spec.model_dir, spec.cfg, spec.seed, base_name=spec.base_name)
    cfg = spec.cfg
    engine = start_engine(
        cfg, model, tokenizer, spec.model_dir, spec.seed, spec.autocast, spec.episode_tokens, spec.rollout
    )
    params = dict(model.named_parameters())
    _send(conn, ("ok", None))  # ready: the parent sizes its micro-batches after this (the engine's memory is taken)
    while True:
        try:
            message = _recv(conn)
        except (EOFError, OSError):
            return  # the training process is gone
        kind = message[0]
        if kind == "close":
            engine.close()
            return
        try:
            if kind == "sync":
                _, state, version = message
                with torch.no_grad():
                    for name, value in state.items():
                        params[name].copy_(value)
                engine.sync(model, version)
                reply: Any = None
            else:
                _, method, args = message
                t = time.perf_counter()
                out = getattr(engine, method)(*args)
                reply = (out, time.perf_counter() - t)
            _send(conn, ("ok", reply))
        except Exception as e:  # every failure goes back to the caller, who raises it
            try:
                _send(conn, ("error", e))
            except Exception:  # one that does not pickle goes back as its text
                _send(conn, ("error", RuntimeError(f"sampler process: {traceback.format_exc()}")))


def _die_with_parent() -> None:
    """Exit when the training process dies, however it dies: the socket's end-of-file ends the loop while this
    process waits for a message; this watchdog covers one that dies mid-rollout (the parent's pid changes when it is
    reparented). Not PR_SET_PDEATHSIG: that fires when the *thread* that started this process ends, and a restart
    runs on the rollout producer's thread, which ends before the run does."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="grpo-sampler-watchdog", daemon=True).start()


def engine_notes(engine: Any) -> list[str]:
    """What ``engine`` has to tell the job's event log since it was last asked (a restarted sampler process)."""
    notes = getattr(engine, "notes", None)
    if not notes:
        return []
    taken = list(notes)
    del notes[: len(taken)]  # a note appended meanwhile stays for the next call
    return taken


if __name__ == "__main__":  # run by SamplerProcess._start; the spec's class is the importable module's, not __main__'s
    from grpo_core import sampler_process

    sampler_process._serve(Connection(int(sys.argv[1])))
