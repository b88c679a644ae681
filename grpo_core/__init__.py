"""grpo_core: a pure GRPO training library.

It knows nothing of HTTP, Celery, databases or object stores: the trainer takes a config, rows, a reward
function and callbacks. ``import grpo_core.schemas.config`` stays free of torch so the API can validate configs.
"""
