"""What it takes for OpenAI's own SDK and job bodies to work unchanged against this service.

Two pieces live here so the job rules in ``api.jobs.service`` stay about GRPO:

- OpenAI's reinforcement hyperparameters that have no GRPO meaning (``reasoning_effort``,
  ``compute_multiplier``) are accepted by ``GRPOConfig`` so an OpenAI RFT body is never refused for them, but a
  user who sets them must learn that they did nothing: :func:`ignored_field_warnings` gives the job's ``warn``
  events. (``learning_rate_multiplier`` does act: the optimizer runs at ``learning_rate × multiplier``.)
- ``GET /v1/fine_tuning/jobs`` filters on metadata as OpenAI's does: ``metadata[k]=v`` (every pair must match;
  ``metadata[k]=`` matches an empty value) or the literal ``metadata=null`` for jobs created without metadata;
  the two forms cannot be combined. The SDK's ``jobs.list(metadata={...})`` sends the first form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sqlalchemy import ColumnElement, Text, cast, exists, func, or_, select

from api.core.errors import InvalidRequest
from api.db.models import Job
from grpo_core.schemas.config import GRPOConfig

_META_KEY = re.compile(r"^metadata\[(.*)\]$")
METADATA_KEY_MAX = 64  # OpenAI's limits on metadata keys and values
METADATA_VALUE_MAX = 512


def ignored_field_warnings(cfg: GRPOConfig) -> list[str]:
    """One message per OpenAI-only hyperparameter the user set to something other than its no-op default."""
    out = []
    if cfg.reasoning_effort != "default":
        out.append(
            f"reasoning_effort={cfg.reasoning_effort!r} has no effect on this service (the base models have no "
            "reasoning-effort setting); bound completions with max_completion_tokens instead"
        )
    if cfg.compute_multiplier != 1.0:
        out.append(
            f"compute_multiplier={cfg.compute_multiplier:g} has no effect on this service; set the exploration "
            "budget explicitly with group_size (completions per prompt) and batch_size (prompts per step)"
        )
    return out


def metadata_filters(query: Iterable[tuple[str, str]], dialect: str) -> list[ColumnElement[bool]]:
    """SQL conditions for OpenAI's metadata filter, read from the raw query pairs (``metadata[k]=v``), so paging
    with ``after``/``limit`` stays in the database. ``dialect`` is the session's (``postgresql``, ``sqlite``)."""
    pairs: dict[str, str] = {}
    null = False
    for name, value in query:
        if name == "metadata":
            if value != "null":
                raise InvalidRequest(
                    "metadata filter: use metadata[key]=value, or metadata=null for jobs without metadata",
                    param="metadata",
                )
            null = True
        elif m := _META_KEY.match(name):
            key = m.group(1)
            if not key or len(key) > METADATA_KEY_MAX or len(value) > METADATA_VALUE_MAX:
                raise InvalidRequest(
                    f"metadata filter: keys are at most {METADATA_KEY_MAX} characters and values at most "
                    f"{METADATA_VALUE_MAX}",
                    param=f"metadata[{key[:METADATA_KEY_MAX]}]",
                )
            pairs[key] = value
    if null and pairs:
        raise InvalidRequest("metadata=null cannot be combined with metadata[key]=value", param="metadata")
    if null:
        # Stored as SQL NULL or as the JSON literal null, depending on how the row was written.
        return [or_(Job.metadata_.is_(None), cast(Job.metadata_, Text) == "null")]
    return [_has_pair(k, v, dialect) for k, v in pairs.items()]


def _has_pair(key: str, value: str, dialect: str) -> ColumnElement[bool]:
    """``metadata[key] == value`` for any key. SQLite's JSON paths cannot quote every key (a ``"`` is a path
    error, and keys stored \\u-escaped never match), so there the object's decoded pairs are searched."""
    if dialect == "sqlite":
        pairs = func.json_each(Job.metadata_).table_valued("key", "value")
        return exists(select(1).select_from(pairs).where(pairs.c.key == key, pairs.c.value == value))
    return Job.metadata_[key].as_string() == value


# The filter as OpenAI's spec declares it (a deepObject query parameter), for the OpenAPI document: FastAPI
# cannot declare ``metadata[k]`` itself, so list_jobs reads the raw query and adds this description.
METADATA_FILTER_PARAM = {
    "name": "metadata",
    "in": "query",
    "required": False,
    "style": "deepObject",
    "explode": True,
    "schema": {"type": "object", "additionalProperties": {"type": "string", "maxLength": METADATA_VALUE_MAX}},
    "description": "Only jobs whose metadata has every given pair: metadata[k]=v. metadata=null selects jobs "
    "created without metadata (the two forms cannot be combined).",
}
