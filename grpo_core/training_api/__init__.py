"""The training API's compute (the ``tinker`` SDK's calls: api.training_api takes them, worker.training_api holds the
session that runs them here): a resident LoRA model that runs forward_backward, optim_step, save/load of its state,
and token-level sampling, one request at a time.

``spec`` (torch-free: the API validates requests with it before queueing them), ``losses`` (the losses as pure
functions of tensors), ``model`` (``TrainingModel``) and ``sampling`` (``Sampler``). The package imports none of
them here, so ``import grpo_core.training_api.spec`` loads no torch.
"""
