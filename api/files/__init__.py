"""``/v1/files``: JSONL uploads checked line by line into the object store."""
