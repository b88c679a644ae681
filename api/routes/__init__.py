"""Thin routes: parse the request, call a service, shape the answer."""
