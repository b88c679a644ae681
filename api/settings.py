"""Service settings from environment variables (pydantic-settings), shared by the API and the worker.

Defaults run everything on one machine with no service: a SQLite file, a filesystem Celery transport and a
local-folder object store, all under ``STATE_DIR``. Setting ``DATABASE_URL``, ``BROKER_URL`` and
``S3_ENDPOINT_URL`` (+ bucket and credentials) switches to Postgres, Redis and S3 with no code change.
This module imports neither FastAPI nor SQLAlchemy, so the worker can use it without the API's DB layer.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    state_dir: Path = Field(Path(".state"), description="Where the embedded defaults keep their files.")
    database_url: str | None = Field(None, description="SQLAlchemy URL; default sqlite:///<state_dir>/rft.db")
    broker_url: str | None = Field(None, description="Celery broker; default a filesystem transport in state_dir")
    # Object store: a local folder unless S3_ENDPOINT_URL or S3_BUCKET is set.
    s3_endpoint_url: str | None = None
    s3_bucket: str | None = None
    s3_region: str = "us-east-1"
    aws_access_key_id: str | None = None
    aws_secret_access_key: str | None = None
    s3_public_endpoint_url: str | None = Field(
        None, description="Where clients reach S3 for presigned downloads (when not S3_ENDPOINT_URL, e.g. compose)."
    )
    object_store_dir: Path | None = Field(None, description="Local object store; default <state_dir>/objects")
    model_catalog_dir: Path | None = Field(
        None, description="Base models, one HF folder each; default <state_dir>/models"
    )
    api_key: str | None = Field(None, description="Bearer key for the public API; unset = open (local use only).")
    worker_token: str | None = Field(None, description="Shared secret of the internal worker API.")
    api_url: str = Field("http://127.0.0.1:8000", description="Where workers reach the API.")
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
    stop_grace_seconds: int = Field(
        300, ge=1, description="After a cancel/pause, how long a stuck step may run before the worker kills itself."
    )
    reaper: bool = Field(True, description="Run the reaper thread in this API process.")
    log_format: str = Field("json", description="json: one JSON object per log line, with request ids; text: plain.")
    rate_limit_per_minute: int = Field(600, ge=0, description="Requests per minute per API key on /v1/; 0 = off.")
    max_active_jobs_per_project: int = Field(
        20, ge=1, description="Queued + running jobs a project may have at once (429 quota_exceeded beyond)."
    )
    job_time_limit_seconds: int | None = Field(
        None, ge=60, description="Worker: wall-clock budget of one attempt (Celery soft limit; hard = +10 min)."
    )
    reward_sandbox: str = Field(
        "auto",
        description="Sandbox for python graders: auto|bwrap (namespaces + seccomp), weak (explicit opt-in, no "
        "namespaces, single tenant only), off (python graders refused). Fails closed when unavailable.",
    )
    judge_base_url: str | None = Field(None, description="OpenAI-compatible endpoint for score_model graders.")
    judge_api_key: str | None = Field(None, description="Bearer key for the judge endpoint.")
    embedding_base_url: str | None = Field(None, description="OpenAI-compatible /embeddings for cosine similarity.")
    embedding_model: str | None = Field(None, description="Embedding model name at that endpoint.")
    embedding_api_key: str | None = None
    cap_max_completion_tokens: int | None = Field(None, description="Service limit on max_completion_tokens.")
    cap_max_prompt_tokens: int | None = Field(None, description="Service limit on max_prompt_tokens.")
    cap_group_size: int | None = Field(None, description="Service limit on group_size and gfpo_sample_size.")
    cap_batch_size: int | None = Field(None, description="Service limit on batch_size (prompts per step).")
    work_dir: Path | None = Field(None, description="Worker scratch space; default <state_dir>/work")
    idempotency_ttl_seconds: int = Field(86400, description="How long an Idempotency-Key is remembered (Stripe: 24h).")
    webhook_dispatcher: bool = Field(True, description="Run the webhook dispatcher thread in this API process.")
    webhook_poll_seconds: float = Field(1.0, description="How often the dispatcher looks for due deliveries.")
    webhook_timeout_seconds: float = Field(10.0, description="Per-attempt HTTP timeout of a webhook delivery.")
    webhook_retry_schedule: list[int] = Field(
        [5, 300, 1800, 7200, 18000, 36000, 36000],
        description="Seconds before each retry after a failed attempt (Standard Webhooks); failed after the last.",
    )

    def grader_env(self):  # type: ignore[no-untyped-def]
        """grpo_core.rewards.graders.GraderEnv from these settings (imported lazily: graders are optional)."""
        from grpo_core.rewards.graders import GraderEnv

        return GraderEnv(
            sandbox_tier=self.reward_sandbox,
            judge_url=self.judge_base_url,
            judge_api_key=self.judge_api_key,
            embedding_url=self.embedding_base_url,
            embedding_model=self.embedding_model,
            embedding_api_key=self.embedding_api_key,
        )

    @property
    def caps(self) -> dict[str, int | None]:
        """The hyperparameter limits this service applies to every job (grpo_core.config.apply_caps)."""
        return {
            "max_completion_tokens": self.cap_max_completion_tokens,
            "max_prompt_tokens": self.cap_max_prompt_tokens,
            "group_size": self.cap_group_size,
            "batch_size": self.cap_batch_size,
        }

    def _state(self, name: str) -> Path:
        path = self.state_dir / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def db_url(self) -> str:
        if self.database_url:
            return self.database_url
        self.state_dir.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{(self.state_dir / 'rft.db').resolve()}"

    @property
    def celery_broker_url(self) -> str:
        return self.broker_url or "filesystem://"

    @property
    def broker_transport_options(self) -> dict:
        """Folders of the filesystem transport (ignored by other brokers)."""
        if self.broker_url:
            return {}
        folder = str(self._state("broker").resolve())
        # control_folder holds the exchange tables; kombu's default is ./control in the working directory.
        control = str(self._state("broker/control").resolve())
        return {
            "data_folder_in": folder,
            "data_folder_out": folder,
            "processed_folder": folder,
            "control_folder": control,
        }

    @property
    def objects_dir(self) -> Path:
        return self.object_store_dir or self._state("objects")

    @property
    def models_dir(self) -> Path:
        return self.model_catalog_dir or self._state("models")

    @property
    def scratch_dir(self) -> Path:
        return self.work_dir or self._state("work")

    @property
    def internal_token(self) -> str:
        """The worker token; on the embedded defaults one is generated once and kept (0600) in state_dir."""
        if self.worker_token:
            return self.worker_token
        if self.database_url or self.broker_url:
            # Beyond one machine each host would generate its own token and every claim would be refused.
            raise ValueError(
                "WORKER_TOKEN must be set (the same on the API and every worker) when DATABASE_URL or BROKER_URL is set"
            )
        path = self.state_dir / "worker_token"
        if not path.exists():
            # API and worker may start together: write aside, then link into place (first one wins).
            self.state_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".worker_token.{os.getpid()}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_urlsafe(32))
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
            tmp.unlink()
        return path.read_text().strip()


@lru_cache
def get_settings() -> Settings:
    return Settings()
