"""Developer scripts: the demo and the local process launcher it shares with the integration tests."""
