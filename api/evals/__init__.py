"""``/v1/evals``: OpenAI-shaped evals; ``internal_routes.py`` -> ``leases.py`` is the worker's side of a run."""
