"""Settings both processes read, from environment variables (pydantic-settings).

``CommonSettings`` holds what the API and the worker must agree on: where the embedded defaults live, the
broker, the object store, the model catalog, the worker token and the services graders call.
``api.core.settings.ApiSettings`` adds what only the API reads (database, keys, limits, reaper, webhooks) and
``worker.settings.WorkerSettings`` what only a worker reads (where the API is, its scratch space, time limits),
so a worker's environment never needs, and never holds, the database URL.

Defaults run everything on one machine with no service: a SQLite file, a filesystem Celery transport and a
local-folder object store, all under ``STATE_DIR``. Setting ``DATABASE_URL``, ``BROKER_URL`` and
``S3_ENDPOINT_URL`` (+ bucket and credentials) switches to Postgres, Redis and S3 with no code change.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from grpo_core.rewards.base import Endpoint, GraderEnv


class CommonSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    state_dir: Path = Field(Path(".state"), description="Where the embedded defaults keep their files.")
    broker_url: str | None = Field(None, description="Celery broker; default a filesystem transport in state_dir")
    # Object store: a local folder unless S3_ENDPOINT_URL or S3_BUCKET is set.
    s3_endpoint_url: str | None = None
    s3_bucket: str | None = None
    s3_region: str = "us-east-1"
    aws_access_key_id: str | None = None
    aws_secret_access_key: str | None = None
    object_store_dir: Path | None = Field(None, description="Local object store; default <state_dir>/objects")
    model_catalog_dir: Path | None = Field(
        None, description="Base models, one HF folder each; default <state_dir>/models"
    )
    worker_token: str | None = Field(None, description="Shared secret of the internal worker API.")
    reward_sandbox: str = Field(
        "auto",
        description="Sandbox for python graders: auto|bwrap (namespaces + seccomp), weak (explicit opt-in, no "
        "namespaces, single tenant only), off (python graders refused). Fails closed when unavailable.",
    )
    judge_base_url: str | None = Field(None, description="OpenAI-compatible endpoint for score_model graders.")
    judge_api_key: str | None = Field(None, description="Bearer key for the judge endpoint.")
    judge_private_endpoints: bool | None = Field(
        None,
        description="Whether a score_model grader's own endpoint may be a loopback or private address (a judge on "
        "the operator's network); unset: yes on the embedded single-machine defaults, no otherwise. Link-local "
        "addresses (cloud metadata) are refused either way.",
    )
    embedding_base_url: str | None = Field(None, description="OpenAI-compatible /embeddings for cosine similarity.")
    embedding_model: str | None = Field(None, description="Embedding model name at that endpoint.")
    embedding_api_key: str | None = None

    def grader_env(self, secrets: Mapping[str, SecretStr] | None = None) -> GraderEnv:
        """What graders may use on this service: the API's pre-flight and the worker's jobs run the same, but for
        a grader's own judge, which only a worker calls, with the values of the project secrets the job's claim
        carries (``secrets``); None (the API): such a judge's messages are rendered, and it is not called."""
        judge = Endpoint(self.judge_base_url, self.judge_api_key)
        embeddings = Endpoint(self.embedding_base_url, self.embedding_api_key, self.embedding_model)
        return GraderEnv(
            self.reward_sandbox,
            judge,
            embeddings,
            private_endpoints=self.private_endpoints_allowed,
            secrets=dict(secrets or {}),
            call_own_judges=secrets is not None,
        )

    @property
    def private_endpoints_allowed(self) -> bool:
        """JUDGE_PRIVATE_ENDPOINTS, or by default whether everything runs on this one machine."""
        return self.single_machine if self.judge_private_endpoints is None else self.judge_private_endpoints

    @property
    def single_machine(self) -> bool:
        """Whether this process runs on the embedded defaults (nothing shared with other machines)."""
        return not self.broker_url

    def _state(self, name: str) -> Path:
        path = self.state_dir / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def celery_broker_url(self) -> str:
        return self.broker_url or "filesystem://"

    @property
    def broker_transport_options(self) -> dict[str, Any]:
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
    def internal_token(self) -> str:
        """The worker token; on the embedded defaults one is generated once and kept (0600) in state_dir."""
        if self.worker_token:
            return self.worker_token
        if not self.single_machine:
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
