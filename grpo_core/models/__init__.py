"""Base-model folders: the local catalog and the inspection of a model's files (no torch)."""
