"""Multi-turn rollouts: the model calls tools (or talks to an environment) over several turns before it is scored.

``schemas`` (the job's ``environment``, torch-free), ``chat`` (templates, the tokens between turns), ``toolcalls``
(parsing and validation), ``sandboxed`` (the user's environment code in the sandbox), ``episodes`` (the batched
rollout loop and its exact loss masks).
"""
