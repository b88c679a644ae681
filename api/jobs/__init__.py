"""``/v1/fine_tuning/jobs``: the managed GRPO job, from creation to its adapter.

``routes.py`` / ``output_routes.py`` -> ``service.py`` are what users call; ``internal_routes.py`` ->
``leases.py`` (and ``rendezvous.py``, ``readiness.py``) what the worker calls under its fenced lease; the reaper's
rules for jobs are ``leases.reap`` (run by api.reaper). A job's checkpoints are api.checkpoints'."""
