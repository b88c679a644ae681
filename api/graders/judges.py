"""A project's own judge, checked where a job or an eval is created (no FastAPI): a score_model grader that names
its own ``endpoint`` (and the project secret holding its key, ``api_key_secret``) instead of the service's judge.

What is checked here, each a 4xx naming the field, before anything is stored:
- the endpoint's host as written (grpo_core.schemas.endpoints: never link-local, loopback or private only when
  JUDGE_PRIVATE_ENDPOINTS allows), with no DNS lookup: the worker resolves and checks again before calling;
- the secret exists in the caller's project (another project's is simply not there: the same answer as a name
  that never existed);
- the job runs on one process: the key travels in the claim to the claiming node's rank 0 only
  (worker.launch), so the other ranks of a multi-process job would have no key to score with.

The API never calls such a judge (its grader checks only render the messages: GraderEnv.call_own_judges), and
never decrypts its key but for the claim of the job or eval run that names it (api.secrets.service.values).
"""

from __future__ import annotations

from pydantic import BaseModel
from sqlalchemy.orm import Session

from api.core.errors import InvalidRequest
from api.core.settings import ApiSettings
from api.secrets import service as project_secrets
from grpo_core.schemas.endpoints import EndpointRefused, check_addresses
from grpo_core.schemas.graders import own_judges


def check_own_judges(
    session: Session,
    settings: ApiSettings,
    project_id: str,
    grader: BaseModel,
    path: str,
    *,
    processes: int = 1,
) -> None:
    """Refuse a grader (at ``path``, e.g. ``method.reinforcement.grader``) whose own judges this service will not
    call (see the module doc); ``processes``: the job's training processes (ranks) over all its nodes."""
    judges = own_judges(grader, path)
    for where, judge in judges.items():
        assert judge.endpoint is not None
        try:
            check_addresses(judge.endpoint, allow_private=settings.private_endpoints_allowed, resolve=False)
        except EndpointRefused as exc:
            raise InvalidRequest(str(exc), param=f"{where}.endpoint", code="endpoint_refused") from None
        if judge.api_key_secret is not None and processes > 1:
            raise InvalidRequest(
                f"a score_model grader's own judge with a key (api_key_secret) runs on one training process for now, "
                f"and this job has {processes}: ask for resources of one device on one node, or leave the key out",
                param=f"{where}.api_key_secret",
            )
    named = {f"{where}.api_key_secret": judge.api_key_secret for where, judge in judges.items()}
    project_secrets.require_named(session, project_id, named)
