# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
"""A client library for accessing RFT service"""

from .client import AuthenticatedClient, Client

__all__ = (
    "AuthenticatedClient",
    "Client",
)
