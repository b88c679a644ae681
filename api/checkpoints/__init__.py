"""Checkpoints, of a managed job (``Checkpoint``) and of a training-API run (``TrainingCheckpoint``), in one place:
``service.py`` registers a checkpoint's row (the commit point), looks it up and lists it; ``downloads.py`` hands
its tar out (streamed, a presigned URL, or a signed link). Both kinds are a PEFT adapter in the object store that a
user lists, downloads and serves, so they share one set of rules.

Below jobs and training: it imports only api.core, api.db and runtime. The rules that guard a checkpoint stay with
its owner: the worker's fence (api.jobs.leases, api.training_api.leases) is checked before a registration, and the
caller's project (api.jobs.access, api.training_api.service) before a lookup, which then passes the job row or the run
id down.
"""
