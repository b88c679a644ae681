"""Graders: pure specs (schemas), scoring functions (graders) and the subprocess runner for user code."""
