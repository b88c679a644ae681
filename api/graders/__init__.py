"""``/v1/fine_tuning/alpha/graders``: graders validated and run before a job is paid for; environments
loaded in the sandbox."""
