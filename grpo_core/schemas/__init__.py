"""Pure, torch-free schemas: the job's config and recipes, metrics, graders, environments, health.

What the API validates and reads; ``import grpo_core.schemas.config`` loads no torch (a test checks it)."""
