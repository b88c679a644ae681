"""Request and response models of the public and internal APIs; their docstrings become the client's."""
