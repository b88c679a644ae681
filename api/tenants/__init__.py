"""Projects and API keys: who is calling (a bearer key resolved to its project, remembered per process)."""
