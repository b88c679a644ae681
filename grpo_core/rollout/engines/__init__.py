"""Rollout engines behind one protocol (grpo_core.rollout.engines.base), built by grpo_core.policy.make_engine."""
