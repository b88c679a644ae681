"""Shared machinery of every domain: settings, errors, dependencies, pagination, idempotency, rate limits,
the queue producer, operations (logging, metrics, health) and the dashboard's static files."""
