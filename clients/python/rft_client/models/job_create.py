# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.integration import Integration
    from ..models.job_budget import JobBudget
    from ..models.job_create_metadata_type_0 import JobCreateMetadataType0
    from ..models.method import Method
    from ..models.resources import Resources


T = TypeVar("T", bound="JobCreate")


@_attrs_define
class JobCreate:
    """Body of ``POST /v1/fine_tuning/jobs``.

    Attributes:
        method (Method):
        model (str): A base model id from GET /v1/models.
        training_file (str): Id of an uploaded JSONL file (purpose fine-tune).
        budget (JobBudget | None | Unset): Pause the job at a checkpoint when its cost reaches max_cost (the project's
            unit) or max_device_hours, with a warning at 80 % (events and webhooks); raise it (POST …/{id}/budget) and
            resume to continue exactly where it stopped. POST /v1/fine_tuning/jobs/estimate says what a job will cost.
        integrations (list[Integration] | None | Unset): OpenAI's integrations: `[{type: wandb, wandb: {project, name,
            entity, tags}}]` mirrors the config, every step's metrics and the adapter's location to Weights & Biases
            (offline files on the worker when it has no WANDB_API_KEY). `api_key_secret: NAME` logs with the W&B key stored
            as this project's secret NAME (POST /v1/secrets) instead of the worker's; `wandb` may then be left out.
        metadata (JobCreateMetadataType0 | None | Unset): Up to 16 pairs (OpenAI's limits: keys ≤ 64, values ≤ 512
            chars).
        preemptible (bool | Unset): Whether a waiting higher-priority job may preempt this one when no worker is free:
            it is checkpointed at its next step boundary, queued again and later resumes exactly where it stopped. Default:
            True.
        preflight (bool | Unset): Probe the base model before training and report whether GRPO can learn on this task
            (GET …/{id}/readiness); true uses hyperparameters.preflight, or its defaults when unset. Default: False.
        priority (int | Unset): Higher runs first (the fleet's order is priority, then each project's fair share, then
            age). Up to the project's max_priority (set by an admin; 0 unless raised); below 0 always allowed. Default: 0.
        resources (Resources | Unset): What one job trains on: ``nodes`` machines, each running ``devices`` training
            processes (ranks) under
            torchrun: one per GPU on a GPU worker, CPU processes on a CPU worker; ``rollout_devices`` of a node's devices
            may
            go to the sampler instead. World size = (devices - rollout_devices) × nodes.
        seed (int | None | Unset): Makes sampling and LoRA init repeatable.
        suffix (None | str | Unset):
        validation_file (None | str | Unset):
    """

    method: Method
    model: str
    training_file: str
    budget: JobBudget | None | Unset = UNSET
    integrations: list[Integration] | None | Unset = UNSET
    metadata: JobCreateMetadataType0 | None | Unset = UNSET
    preemptible: bool | Unset = True
    preflight: bool | Unset = False
    priority: int | Unset = 0
    resources: Resources | Unset = UNSET
    seed: int | None | Unset = UNSET
    suffix: None | str | Unset = UNSET
    validation_file: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.job_budget import JobBudget  # noqa: PLC0415
        from ..models.job_create_metadata_type_0 import JobCreateMetadataType0  # noqa: PLC0415

        method = self.method.to_dict()

        model = self.model

        training_file = self.training_file

        budget: dict[str, Any] | None | Unset
        if isinstance(self.budget, Unset):
            budget = UNSET
        elif isinstance(self.budget, JobBudget):
            budget = self.budget.to_dict()
        else:
            budget = self.budget

        integrations: list[dict[str, Any]] | None | Unset
        if isinstance(self.integrations, Unset):
            integrations = UNSET
        elif isinstance(self.integrations, list):
            integrations = []
            for integrations_type_0_item_data in self.integrations:
                integrations_type_0_item = integrations_type_0_item_data.to_dict()
                integrations.append(integrations_type_0_item)

        else:
            integrations = self.integrations

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, JobCreateMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        preemptible = self.preemptible

        preflight = self.preflight

        priority = self.priority

        resources: dict[str, Any] | Unset = UNSET
        if not isinstance(self.resources, Unset):
            resources = self.resources.to_dict()

        seed: int | None | Unset
        if isinstance(self.seed, Unset):
            seed = UNSET
        else:
            seed = self.seed

        suffix: None | str | Unset
        if isinstance(self.suffix, Unset):
            suffix = UNSET
        else:
            suffix = self.suffix

        validation_file: None | str | Unset
        if isinstance(self.validation_file, Unset):
            validation_file = UNSET
        else:
            validation_file = self.validation_file

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "method": method,
                "model": model,
                "training_file": training_file,
            }
        )
        if budget is not UNSET:
            field_dict["budget"] = budget
        if integrations is not UNSET:
            field_dict["integrations"] = integrations
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if preemptible is not UNSET:
            field_dict["preemptible"] = preemptible
        if preflight is not UNSET:
            field_dict["preflight"] = preflight
        if priority is not UNSET:
            field_dict["priority"] = priority
        if resources is not UNSET:
            field_dict["resources"] = resources
        if seed is not UNSET:
            field_dict["seed"] = seed
        if suffix is not UNSET:
            field_dict["suffix"] = suffix
        if validation_file is not UNSET:
            field_dict["validation_file"] = validation_file

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.integration import Integration  # noqa: PLC0415
        from ..models.job_budget import JobBudget  # noqa: PLC0415
        from ..models.job_create_metadata_type_0 import JobCreateMetadataType0  # noqa: PLC0415
        from ..models.method import Method  # noqa: PLC0415
        from ..models.resources import Resources  # noqa: PLC0415

        d = dict(src_dict)
        method = Method.from_dict(d.pop("method"))

        model = d.pop("model")

        training_file = d.pop("training_file")

        def _parse_budget(data: object) -> JobBudget | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                budget_type_0 = JobBudget.from_dict(data)

                return budget_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JobBudget | None | Unset, data)

        budget = _parse_budget(d.pop("budget", UNSET))

        def _parse_integrations(data: object) -> list[Integration] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                integrations_type_0 = []
                _integrations_type_0 = data
                for integrations_type_0_item_data in _integrations_type_0:
                    integrations_type_0_item = Integration.from_dict(integrations_type_0_item_data)

                    integrations_type_0.append(integrations_type_0_item)

                return integrations_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[Integration] | None | Unset, data)

        integrations = _parse_integrations(d.pop("integrations", UNSET))

        def _parse_metadata(data: object) -> JobCreateMetadataType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = JobCreateMetadataType0.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JobCreateMetadataType0 | None | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        preemptible = d.pop("preemptible", UNSET)

        preflight = d.pop("preflight", UNSET)

        priority = d.pop("priority", UNSET)

        _resources = d.pop("resources", UNSET)
        resources: Resources | Unset
        if isinstance(_resources, Unset):
            resources = UNSET
        else:
            resources = Resources.from_dict(_resources)

        def _parse_seed(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        seed = _parse_seed(d.pop("seed", UNSET))

        def _parse_suffix(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        suffix = _parse_suffix(d.pop("suffix", UNSET))

        def _parse_validation_file(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        validation_file = _parse_validation_file(d.pop("validation_file", UNSET))

        job_create = cls(
            method=method,
            model=model,
            training_file=training_file,
            budget=budget,
            integrations=integrations,
            metadata=metadata,
            preemptible=preemptible,
            preflight=preflight,
            priority=priority,
            resources=resources,
            seed=seed,
            suffix=suffix,
            validation_file=validation_file,
        )

        return job_create
