# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
"""Contains endpoint functions for accessing the API"""
