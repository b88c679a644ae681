"""Base models: the local catalog and the inspection of a model's files (``catalog``, ``files``: no torch), and a
prompt's KV cache shared by the rows that hold it (``prefix_cache``, on the loaded model)."""
