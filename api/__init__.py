"""api: the FastAPI service (routes, schemas, services, the database). The only writer of the database."""
