"""``/v1/chat/completions`` and ``/v1/completions``: proxied to the vLLM server with the job's adapter."""
