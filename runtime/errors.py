"""Failures of what a job runs on (the object store, the network, the API), as opposed to the job's own mistakes.

The worker reports a run that ended in an ``InfrastructureError`` as retryable: another attempt, perhaps on
another machine, may not meet it. A user's bad data or grader never is (grpo_core.errors.UserError).
"""

from __future__ import annotations


class InfrastructureError(Exception):
    """Something the job depends on failed; retrying the job later may succeed."""


class StoreError(InfrastructureError):
    """The object store refused or could not be reached (the S3 client's error is the ``__cause__``)."""
