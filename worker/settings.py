"""A worker's settings: the shared ones (runtime.settings.CommonSettings) plus what only a worker reads.

No database URL here, by design: a GPU machine that runs untrusted reward code talks to the API, never to
Postgres. The lease's length comes from the claim (the API grants it), not from the worker's environment.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field

from runtime.settings import CommonSettings


class WorkerSettings(CommonSettings):
    api_url: str = Field("http://127.0.0.1:8000", description="Where workers reach the API.")
    worker_devices: int | None = Field(
        None,
        ge=1,
        description="Devices this worker offers one job (the scheduler gives it only jobs that fit); unset: its GPUs, "
        "or any number of processes on a CPU worker.",
    )
    worker_nodes: int | None = Field(
        None, ge=1, description="Nodes a job this worker leads may span; unset: any (up to the API's MAX_NODES)."
    )
    pool_tenants: int | None = Field(
        None,
        ge=1,
        le=64,
        description="Jobs of one base model this worker process trains in turn on one resident copy (worker.pool), "
        "training-API sessions it serves at once (worker.training_api.pool), or both (a pool of jobs takes sessions "
        "whose runs fit its resident); unset on a GPU: a pool of jobs sized by its memory plan once its first "
        "job's step has run (at most 8), 4 sessions; 1 (no pool) on a CPU.",
    )
    pool_sample_together: bool | None = Field(
        None,
        description="A pool of jobs decodes its tenants' rollouts in one pass and runs their updates in shared "
        "passes, and a pool of training-API sessions runs the forward_backward calls pending at once in shared "
        "passes, each row and token through its own adapter (equal to each alone within rounding; a job with "
        "pool_exact, a run with user_metadata pool_exact, works alone); unset: on a GPU, not on a CPU (where the "
        "arithmetic grows with the rows and working together saves nothing).",
    )
    training_precision: Literal["auto", "fp32", "bf16"] = Field(
        "auto",
        description="Training API: the precision of the runs and sampling clients this worker serves (a tinker "
        "client cannot choose one). auto: bf16 on a GPU with bf16 and on a CPU whose bf16 matmul is at least 1.5x "
        "its fp32 (grpo_core.hardware.device.resolve_precision), else fp32; fp32 gives results that do not "
        "depend on the CPU and runs whose passes are shared equal alone within fp32 rounding.",
    )
    training_sample_batch: int = Field(
        32,
        ge=1,
        le=256,
        description="Training API: at most this many sample requests of a session, queued together, in one answer "
        "from the API, decoded together (1: one request at a time).",
    )
    stop_grace_seconds: int = Field(
        300, ge=1, description="After a cancel/pause, how long a stuck step may run before the worker kills itself."
    )
    job_time_limit_seconds: int | None = Field(
        None, ge=60, description="Wall-clock budget of one attempt (Celery soft limit; hard = +10 min)."
    )
    advertise_addr: str | None = Field(
        None,
        description="The address other nodes of a multi-node job reach this worker at (its torchrun hosts the "
        "rendezvous there); default: the address this host reaches API_URL from. In Kubernetes, the pod IP.",
    )
    inference_serve_ports: str = Field(
        "8200-8299",
        pattern=r"^\d{1,5}-\d{1,5}$",
        description="The ports an inference replica this worker starts on demand may listen on (worker.serving): "
        "the first free one; a NetworkPolicy admits the API to this range.",
    )
    rendezvous_timeout_seconds: int = Field(
        600, ge=10, description="How long a multi-node job's first node waits for the others to join its torchrun."
    )
    work_dir: Path | None = Field(
        None, description="Scratch space for datasets and checkpoints; default <state_dir>/work"
    )
    model_cache_dir: Path | None = Field(
        None,
        description="This node's cache of registered base models (shared by its worker processes); default "
        "<state_dir>/model-cache",
    )
    wandb_dir: Path | None = Field(
        None, description="Where W&B runs are written (offline runs stay there); default <state_dir>/wandb"
    )
    mlflow_tracking_uri: str | None = Field(
        None, description="Mirror every job's config, metrics and adapter location to this MLflow server or store."
    )
    mlflow_experiment: str = Field("rft", description="The MLflow experiment the jobs' runs go to.")
    model_cache_max_gb: float = Field(
        200.0, gt=0, description="Size cap of the model cache: least recently used models are evicted beyond it."
    )

    def rendezvous_host(self) -> str:
        """ADVERTISE_ADDR, else the address this host uses to reach the API: a host's name often resolves to a
        loopback address (127.0.1.1 on Debian), which other nodes cannot reach."""
        import socket
        from urllib.parse import urlparse

        if self.advertise_addr:
            return self.advertise_addr
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((urlparse(self.api_url).hostname or "127.0.0.1", 9))  # UDP: sends nothing
                return str(s.getsockname()[0])
        except OSError:
            return socket.gethostbyname(socket.gethostname())

    @property
    def serve_ports(self) -> range:
        low, high = (int(p) for p in self.inference_serve_ports.split("-"))
        return range(low, high + 1)

    @property
    def scratch_dir(self) -> Path:
        return self.work_dir or self._state("work")

    @property
    def wandb_path(self) -> Path:
        return self.wandb_dir or self._state("wandb")

    @property
    def model_cache_path(self) -> Path:
        return self.model_cache_dir or self._state("model-cache")


@lru_cache
def get_settings() -> WorkerSettings:
    return WorkerSettings()
