"""Probing a policy: validation during training, eval runs, the readiness probe and report, health."""
