"""The API's database layer (SQLAlchemy 2). Only the API imports it; workers go through the internal API."""
