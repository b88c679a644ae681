"""``/v1/secrets``: a project's named secrets (a W&B key its jobs log with), encrypted at rest, never read back."""
