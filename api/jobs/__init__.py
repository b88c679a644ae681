"""``/v1/fine_tuning/jobs``: the managed GRPO job, from creation to its adapter.

``routes.py`` / ``output_routes.py`` -> ``service.py`` are what users call; ``internal_routes.py`` ->
``leases.py`` (and ``rendezvous.py``, ``readiness.py``) what the worker calls under its fenced lease;
``reaper.py`` the API's own background sweep."""
