"""The training API on the worker: a session held for a user's own loop (the ``tinker`` SDK's calls).

``session`` leases the session from the API, takes its requests in order and posts each typed result
(runtime.training_api); ``resident`` holds what a session keeps between calls (each training run's model and
optimizer, its samplers) and answers one request of each type on grpo_core.training_api.
"""
