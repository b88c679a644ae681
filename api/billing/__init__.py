"""Money: the operator's prices (``prices``), what usage costs (the usage records are the one meter), budgets that
pause a job or hold a project back (``budgets``), and the estimate of a job before it runs (``estimate``)."""
