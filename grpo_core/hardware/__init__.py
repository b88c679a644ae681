"""Where a job runs: device and precision, distributed ranks, memory planning, sharding."""
