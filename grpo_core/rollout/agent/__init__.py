"""Multi-turn rollouts: the model calls tools (or talks to an environment) over several turns before it is scored.

The job's ``environment`` is grpo_core.schemas.environment (torch-free) and the chat templates with the tokens
between turns are grpo_core.data.chat (the data side renders prompts with them too); here: ``toolcalls`` (parsing
and validation), ``sandboxed`` (the user's environment code in the sandbox), ``episodes`` (the batched
rollout loop and its exact loss masks).
"""
