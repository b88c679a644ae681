"""Tables, one module per domain's tables, each table and state defined once; importing this package loads every
table into ``Base.metadata`` (what Alembic compares with the migrations: migrations/env.py).

Timestamps are Unix seconds (OpenAI's convention); ids are prefixed strings (file-…, ftjob-…). ``base`` holds
``Base`` (with the naming convention for constraints), ``now`` and ``new_id``; the rest are named for their domain:
``jobs`` (and ``JobStatus`` with its groups, ``ResumeReason``), ``checkpoints`` (a job's and a training run's),
``billing`` (changes of prices and budgets), ``files``, ``evals``, ``models`` (the registry), ``tenants``,
``training``, ``webhooks``, ``usage``, ``secrets``, ``idempotency``.
Import a table from here (``from api.db.models import Job``).
"""

from __future__ import annotations

from api.db.models.base import NAMING, Base, new_id, now
from api.db.models.billing import BillingChange
from api.db.models.checkpoints import Checkpoint, TrainingCheckpoint
from api.db.models.evals import EVAL_RUN_ACTIVE, Eval, EvalOutputItem, EvalRun, EvalRunStatus
from api.db.models.files import File
from api.db.models.idempotency import IdempotencyKey
from api.db.models.inference import LIVE_REPLICA, InferenceReplica, ReplicaOrigin, ReplicaState
from api.db.models.jobs import (
    ACTIVE,
    TERMINAL,
    UNFINISHED,
    Job,
    JobEvent,
    JobStatus,
    ReinforcementSpec,
    ResumeReason,
    job_leased,
)
from api.db.models.models import RegisteredModel
from api.db.models.secrets import ProjectSecret
from api.db.models.tenants import DEFAULT_PROJECT, ApiKey, Project
from api.db.models.training_api import (
    SamplingSession,
    TrainingRequest,
    TrainingRequestStatus,
    TrainingRun,
    TrainingRunMetrics,
    TrainingSession,
    TrainingSessionStatus,
    session_held,
)
from api.db.models.usage import UsageKind, UsageRecord
from api.db.models.webhooks import WebhookDelivery, WebhookEndpoint

__all__ = [
    "ACTIVE",
    "DEFAULT_PROJECT",
    "EVAL_RUN_ACTIVE",
    "LIVE_REPLICA",
    "NAMING",
    "TERMINAL",
    "UNFINISHED",
    "ApiKey",
    "Base",
    "BillingChange",
    "Checkpoint",
    "Eval",
    "EvalOutputItem",
    "EvalRun",
    "EvalRunStatus",
    "File",
    "IdempotencyKey",
    "InferenceReplica",
    "Job",
    "JobEvent",
    "JobStatus",
    "Project",
    "ProjectSecret",
    "RegisteredModel",
    "ReinforcementSpec",
    "ReplicaOrigin",
    "ReplicaState",
    "ResumeReason",
    "SamplingSession",
    "TrainingCheckpoint",
    "TrainingRequest",
    "TrainingRequestStatus",
    "TrainingRun",
    "TrainingRunMetrics",
    "TrainingSession",
    "TrainingSessionStatus",
    "UsageKind",
    "UsageRecord",
    "WebhookDelivery",
    "WebhookEndpoint",
    "job_leased",
    "new_id",
    "now",
    "session_held",
]
