"""``/v1/admin/fleet``: what each worker process holds now (its jobs and training sessions: a pool's tenants), for the
operator (ADMIN_TOKEN) and the dashboard's fleet page. Read from the leases the workers renew; nothing is reported
apart from them."""
