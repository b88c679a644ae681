"""An engine that already runs apart from the trainer (vLLM: its EngineCore is a process of its own), shared by the
rollout producer thread and the training thread when ``max_staleness`` > 0 (grpo_core.rollout.pipeline).

Calls are serialised. ``sync`` never waits for a rollout in flight: it freezes a copy of the adapter's tensors (a
few MB; the base weights never move) and the next call, from either thread, hands it to the engine first: for vLLM,
a LoRA hot swap, as in the synchronous loop. Every rollout comes back stamped with the version of the adapter that
sampled it.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from grpo_core.hardware.device import HOST
from grpo_core.rollout.batch import Rollout
from grpo_core.rollout.engines.base import RolloutEngine, Sampling


class FrozenAdapter:
    """The policy's LoRA adapter at one step, detached from the live model: what ``VLLMEngine.sync`` reads (its
    ``peft_config`` and ``save_pretrained``), so the trainer may update the model while the swap waits."""

    def __init__(self, model: Any) -> None:
        from peft import get_peft_model_state_dict

        self.peft_config = copy.deepcopy(model.peft_config)
        # save_embedding_layers False: the vocabulary is never resized here, and "auto" would look the base model up
        state = get_peft_model_state_dict(model, save_embedding_layers=False)
        self.state = {k: v.detach().to(HOST, copy=True) for k, v in state.items()}

    def save_pretrained(self, path: Path) -> None:
        """The adapter folder PEFT would write (adapter_config.json, adapter_model.safetensors)."""
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.peft_config["default"].save_pretrained(str(path))
        save_file(self.state, str(path / "adapter_model.safetensors"))


class SharedEngine:
    """``engine`` behind a lock, its syncs deferred to the next call (see the module doc)."""

    def __init__(self, engine: RolloutEngine, version: int) -> None:
        """``engine`` samples from policy version ``version`` now."""
        self.engine, self.name = engine, engine.name
        self._lock = threading.Lock()  # one call at a time
        self._handoff = threading.Lock()  # the pending adapter changes hands atomically
        self._pending: tuple[FrozenAdapter, int] | None = None
        self._version = version

    def sync(self, model: Any, step: int) -> None:
        frozen = FrozenAdapter(model)
        with self._handoff:
            self._pending = (frozen, step)

    def _apply(self) -> int:
        with self._handoff:
            pending, self._pending = self._pending, None
        if pending is not None:
            self.engine.sync(pending[0], pending[1])
            self._version = pending[1]
        return self._version

    def generate(self, prompts: list[str], sampling: Sampling) -> Rollout:
        with self._lock:
            version = self._apply()
            ro = self.engine.generate(prompts, sampling)
        return replace(ro, versions=torch.full((len(ro.texts),), version, dtype=torch.long, device=HOST))

    def continue_turns(
        self, sequences: list[list[int]], sampling: Sampling, rows: list[int]
    ) -> list[tuple[list[int], list[float] | None]]:
        with self._lock:
            self._apply()
            return self.engine.continue_turns(sequences, sampling, rows)

    def suspend(self) -> None:
        """Nothing: the engine keeps sampling while the trainer updates (its sleep mode is off at k > 0)."""

    def close(self) -> None:
        with self._lock:
            self.engine.close()
