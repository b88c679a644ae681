"""``/v1/models`` and the model registry (base models whose files live in the object store), and what a ``model``
name means for a project (``served.py``: a base model, a fine-tuned model, one checkpoint), as inference and evals
resolve it."""
