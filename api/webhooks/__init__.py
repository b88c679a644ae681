"""``/v1/webhook_endpoints``: signed job notifications; ``dispatch.py`` delivers them in the background."""
