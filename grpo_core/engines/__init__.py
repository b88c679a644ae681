"""Rollout engines behind one protocol (grpo_core.engines.base)."""
