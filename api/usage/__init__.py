"""``/v1/usage``: what each project used (device-seconds by device kind, steps, tokens, grader calls).

``metering.py`` writes the records as workers and the inference proxy report (called from api.jobs.leases,
api.evals.leases, api.training_api.leases and api.inference.routes); ``service.py`` sums them; ``routes.py`` serves
them to a project (``/v1/usage``) and to the operator (``/v1/admin/usage``)."""
