"""The sampling side of a step: engines, the batched rollout, multi-turn agents, scoring into a batch."""
