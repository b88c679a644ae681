"""The API process's settings: the shared ones (runtime.settings.CommonSettings) plus what only the API reads —
the database, keys, limits, leases and retries it grants, the reaper and webhooks.

This module imports neither FastAPI nor SQLAlchemy (migrations/env.py and api.admin read it too).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr

from runtime.settings import CommonSettings
from runtime.storage import ObjectStore, make_store


class ApiSettings(CommonSettings):
    database_url: str | None = Field(None, description="SQLAlchemy URL; default sqlite:///<state_dir>/rft.db")
    s3_public_endpoint_url: str | None = Field(
        None, description="Where clients reach S3 for presigned downloads (when not S3_ENDPOINT_URL, e.g. compose)."
    )
    api_key: str | None = Field(None, description="Bearer key for the public API; unset = open (local use only).")
    admin_token: str | None = Field(
        None,
        description="Bearer token of the operator routes (/v1/admin/…: the model registry); unset = those routes "
        "are off (python -m api.admin works on the database directly).",
    )
    public_url: str | None = Field(
        None,
        description="Where users reach the API (e.g. https://rft.example.com), for the download links it makes; "
        "unset: the URL of the request (behind a TLS proxy, set this or uvicorn's --forwarded-allow-ips).",
    )
    max_upload_bytes: int = Field(512 * 1024 * 1024, description="Largest accepted upload.")
    lease_seconds: int = Field(600, description="A running job's lease; the worker renews it between steps.")
    max_attempts: int = Field(3, ge=1, description="Claims a job may use (worker losses and retryable failures).")
    retry_backoff_seconds: int = Field(30, ge=0, description="First retry delay; doubles per attempt, capped at 1 h.")
    reaper_interval_seconds: float = Field(30.0, gt=0, description="How often the API's reaper looks at leases.")
    requeue_after_seconds: int = Field(
        300, ge=1, description="A queued job not claimed this long after its doorbell gets it rung again."
    )
    reaper: bool = Field(True, description="Run the reaper thread in this API process.")
    training_idle_timeout_seconds: int = Field(
        900,
        ge=10,
        description="A training API session with no request for this long is handed back: its worker frees the "
        "device, and its models' unsaved state is gone (a clear error says so).",
    )
    training_lease_seconds: int = Field(
        60, ge=5, description="A training API session's lease; its worker renews it every third of it."
    )
    training_poll_seconds: float = Field(
        20.0, gt=0, le=40, description="How long retrieve_future holds a poll open for a result (the SDK waits 45 s)."
    )
    log_format: str = Field("json", description="json: one JSON object per log line, with request ids; text: plain.")
    rate_limit_per_minute: int = Field(
        600, ge=0, description="Requests per minute per API key on /v1/ and /api/v1/; 0 = off."
    )
    rate_limit_redis_url: str | None = Field(
        None,
        description="Redis holding the rate limit's buckets, one budget per key shared by every API process; "
        "default BROKER_URL when that is redis:// or rediss://; 'off': each API process keeps its own buckets "
        "(the default without a Redis broker). While Redis does not answer, each process limits on its own.",
    )
    max_active_jobs_per_project: int = Field(
        20,
        ge=1,
        description="Queued + running jobs a project may have at once (429 quota_exceeded beyond); how many "
        "of them run at once is max_running_jobs_per_project.",
    )
    max_running_jobs_per_project: int | None = Field(
        None,
        ge=1,
        description="Jobs of one project running at once (an admin may set a project's own); more wait queued, saying "
        "why. Unset: no limit beyond the fleet.",
    )
    fair_share_half_life_seconds: int = Field(
        86400,
        ge=60,
        description="Fair share: a project's device-seconds count half after this long when the next job is chosen.",
    )
    preemption_grace_seconds: int = Field(
        30,
        ge=0,
        description="How long a higher-priority job waits unclaimed (no worker free) before a lower-priority "
        "preemptible job is checkpointed and requeued to free a worker for it.",
    )
    cap_max_completion_tokens: int | None = Field(None, description="Service limit on max_completion_tokens.")
    cap_max_prompt_tokens: int | None = Field(None, description="Service limit on max_prompt_tokens.")
    cap_group_size: int | None = Field(None, description="Service limit on group_size and gfpo_sample_size.")
    cap_batch_size: int | None = Field(None, description="Service limit on batch_size (prompts per step).")
    max_devices_per_node: int = Field(
        1,
        ge=1,
        le=64,
        description="Devices (training processes) each worker machine of this deployment offers one job; a job asking "
        "for more resources.devices is refused (422).",
    )
    max_nodes: int = Field(
        1,
        ge=1,
        le=64,
        description="Worker machines one job may span (multi-node jobs rendezvous through the internal API); a job "
        "asking for more resources.nodes is refused (422).",
    )
    inference_base_url: str | None = Field(
        None,
        description="An OpenAI-compatible server that loads LoRA adapters at run time (vLLM: python -m "
        "worker.inference_server), e.g. http://127.0.0.1:8100/v1; /v1/chat/completions and /v1/completions forward "
        "to it. Unset: those routes answer 503.",
    )
    inference_api_key: str | None = Field(None, description="Bearer key the inference server wants (vLLM --api-key).")
    inference_adapter_dir: Path | None = Field(
        None,
        description="Where the API extracts adapters for the inference server to load; a folder the server reads "
        "too (a shared volume). Default <state_dir>/inference-adapters.",
    )
    inference_adapter_server_dir: str | None = Field(
        None, description="The same folder as the inference server sees it (default: INFERENCE_ADAPTER_DIR)."
    )
    inference_max_adapters: int = Field(
        8, ge=1, description="Adapters kept loaded in the inference server (its --max-cpu-loras); LRU beyond."
    )
    inference_max_lora_rank: int = Field(
        64, ge=1, description="The inference server's --max-lora-rank: a fine-tuned model of a higher rank is a 400."
    )
    inference_timeout_seconds: float = Field(600.0, gt=0, description="Longest wait for one inference answer.")
    inference_endpoints: dict[str, list[str]] = Field(
        default_factory=dict,
        description="The operator's inference replicas by base model, as JSON: "
        '{"Qwen2.5-7B-Instruct": ["http://qwen-7b-0:8100/v1", "http://qwen-7b-1:8100/v1"]} (compose services, the '
        "Service of a Kubernetes Deployment). An URL written dns+http://name:port/v1 is every address the name "
        "resolves to (a headless Service: each ready pod a replica). INFERENCE_BASE_URL adds one more, of whichever "
        "model it serves. More may be registered at run time (python -m api.admin inference add).",
    )
    inference_on_demand: bool | None = Field(
        None,
        description="Start a replica on a worker when a registered base model with none is asked for, and stop it "
        "after INFERENCE_IDLE_SECONDS without requests. Default: on with the embedded defaults, off on a fleet.",
    )
    inference_idle_seconds: float = Field(
        600.0, gt=0, description="A replica started on demand stops after this long without a request."
    )
    inference_start_wait_seconds: float = Field(
        60.0,
        ge=0,
        description="How long a request for a model whose replica is starting waits before it is answered 503 with "
        "Retry-After (the start goes on; OpenAI's SDK retries).",
    )
    inference_replica_concurrency: int = Field(
        64,
        ge=1,
        description="Requests in flight to one replica (from one API process) before a model's requests spread to "
        "the next replica.",
    )
    inference_start_timeout_seconds: float = Field(
        900.0, gt=0, description="How long a worker waits for a replica it started to answer before it fails it."
    )
    inference_health_seconds: float = Field(
        10.0, gt=0, description="How often each replica's /models is checked; a replica failing it is skipped."
    )
    idempotency_ttl_seconds: int = Field(86400, description="How long an Idempotency-Key is remembered (Stripe: 24h).")
    secrets_key: SecretStr | None = Field(
        None,
        description="Fernet keys that encrypt project secrets at rest (POST /v1/secrets), comma-separated: the first "
        "encrypts, every one decrypts, so a new key goes first and `python -m api.admin secrets reencrypt` retires "
        "the old. Unset: on the embedded defaults a key generated once into <state_dir>/secrets_key (0600); "
        "beyond one machine secrets are off (503) until it is set.",
    )
    price_currency: str = Field(
        "USD", min_length=1, max_length=16, description="The unit of every price and budget once a price is set."
    )
    price_device_hour: dict[str, float] = Field(
        default_factory=dict,
        description='Price of one device-hour by device kind, as JSON: {"H100": 2.5, "cpu": 0.05, "default": 2.0}. A '
        "key matches a kind it names exactly, else the longest key the kind contains (case-insensitive: 'H100' "
        "matches 'NVIDIA H100 80GB HBM3'); 'default' prices the rest (without it, the highest price listed). A "
        "project may have its own (python -m api.admin billing set). Unset, and no project's set: costs and budgets "
        "are in device-hours.",
    )
    price_inference_per_million_tokens: float = Field(
        0.0, ge=0, description="Price of a million tokens answered through /v1/chat/completions and /v1/completions."
    )
    webhook_dispatcher: bool = Field(True, description="Run the webhook dispatcher thread in this API process.")
    webhook_poll_seconds: float = Field(1.0, description="How often the dispatcher looks for due deliveries.")
    webhook_timeout_seconds: float = Field(10.0, description="Per-attempt HTTP timeout of a webhook delivery.")
    webhook_retry_schedule: list[int] = Field(
        [5, 300, 1800, 7200, 18000, 36000, 36000],
        description="Seconds before each retry after a failed attempt (Standard Webhooks); failed after the last.",
    )

    @property
    def serves_on_demand(self) -> bool:
        """Whether a model with no replica gets one started (INFERENCE_ON_DEMAND, default: one machine only)."""
        return self.single_machine if self.inference_on_demand is None else self.inference_on_demand

    @property
    def adapters_dir(self) -> Path:
        return self.inference_adapter_dir or self._state("inference-adapters")

    @property
    def single_machine(self) -> bool:
        return not (self.database_url or self.broker_url)

    @property
    def rate_limit_redis(self) -> str | None:
        """Where the rate limit's buckets live (api.core.ratelimit): RATE_LIMIT_REDIS_URL, else a Redis broker; None:
        in this process."""
        url = self.rate_limit_redis_url
        if url is None and self.broker_url and self.broker_url.startswith(("redis://", "rediss://")):
            url = self.broker_url
        return None if not url or url == "off" else url

    @property
    def caps(self) -> dict[str, int | None]:
        """The hyperparameter limits this service applies to every job (grpo_core.schemas.config.apply_caps)."""
        return {
            "max_completion_tokens": self.cap_max_completion_tokens,
            "max_prompt_tokens": self.cap_max_prompt_tokens,
            "group_size": self.cap_group_size,
            "batch_size": self.cap_batch_size,
        }

    @property
    def db_url(self) -> str:
        if self.database_url:
            return self.database_url
        self.state_dir.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{(self.state_dir / 'rft.db').resolve()}"

    def store(self) -> ObjectStore:
        """The object store, signing download links for where clients reach it."""
        return make_store(self, public_endpoint_url=self.s3_public_endpoint_url)


@lru_cache
def get_settings() -> ApiSettings:
    return ApiSettings()
