"""The training side of a step: advantages, log-probs, the policy loss, the optimizer step, schedules."""
