"""``/v1/models`` and the model registry (base models whose files live in the object store)."""
