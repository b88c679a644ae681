"""Rules and state transitions, free of FastAPI: routes parse, call a service, and shape the answer."""
