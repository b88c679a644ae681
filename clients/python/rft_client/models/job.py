# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.job_budget_alert_type_0 import JobBudgetAlertType0, check_job_budget_alert_type_0
from ..models.job_status import JobStatus, check_job_status
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.execution import Execution
    from ..models.integration import Integration
    from ..models.job_budget import JobBudget
    from ..models.job_error import JobError
    from ..models.job_hyperparameters import JobHyperparameters
    from ..models.job_metadata_type_0 import JobMetadataType0
    from ..models.job_method import JobMethod
    from ..models.job_usage import JobUsage
    from ..models.resources import Resources
    from ..models.waiting import Waiting


T = TypeVar("T", bound="Job")


@_attrs_define
class Job:
    """A fine-tuning job (``fine_tuning.job``).

    Attributes:
        created_at (int):
        error (JobError | None):
        fine_tuned_model (None | str):
        finished_at (int | None):
        hyperparameters (JobHyperparameters): The resolved GRPO hyperparameters the job runs with.
        id (str):
        metadata (JobMetadataType0 | None):
        method (JobMethod):
        model (str):
        organization_id (str):
        resources (Resources): What one job trains on: ``nodes`` machines, each running ``devices`` training processes
            (ranks) under
            torchrun: one per GPU on a GPU worker, CPU processes on a CPU worker; ``rollout_devices`` of a node's devices
            may
            go to the sampler instead. World size = (devices - rollout_devices) × nodes.
        seed (int):
        status (JobStatus):
        steps_done (int): Optimizer steps finished so far.
        suffix (None | str):
        total_steps (int): Optimizer steps the job will take.
        trained_tokens (int | None):
        training_file (str):
        validation_file (None | str):
        budget (JobBudget | None | Unset): Its budget (null: none).
        budget_alert (JobBudgetAlertType0 | None | Unset): The budget's last alert: 'warning' at 80 %, 'reached' at the
            cap (the job then pauses).
        estimated_finish (int | None | Unset):
        execution (Execution | None | Unset): Where and how the worker trains it: the device, and what the `auto`
            hyperparameters (device, precision, micro_batch_size, gradient_checkpointing, rollout_engine) resolved to on its
            hardware; null until training starts.
        integrations (list[Integration] | None | Unset): Where the job's metrics are mirrored.
        object_ (Literal['fine_tuning.job'] | Unset):  Default: 'fine_tuning.job'.
        preemptible (bool | Unset): Whether a higher-priority job may preempt it. Default: True.
        priority (int | Unset): Its place in the fleet's order: higher runs first. Default: 0.
        result_files (list[str] | Unset):
        usage (JobUsage | Unset): What a job used, summed over its attempts (a killed and resumed job: both attempts,
            each once).
        waiting (None | Unset | Waiting): Why a queued job has not started yet (null otherwise): its place in line, or
            what holds it.
    """

    created_at: int
    error: JobError | None
    fine_tuned_model: None | str
    finished_at: int | None
    hyperparameters: JobHyperparameters
    id: str
    metadata: JobMetadataType0 | None
    method: JobMethod
    model: str
    organization_id: str
    resources: Resources
    seed: int
    status: JobStatus
    steps_done: int
    suffix: None | str
    total_steps: int
    trained_tokens: int | None
    training_file: str
    validation_file: None | str
    budget: JobBudget | None | Unset = UNSET
    budget_alert: JobBudgetAlertType0 | None | Unset = UNSET
    estimated_finish: int | None | Unset = UNSET
    execution: Execution | None | Unset = UNSET
    integrations: list[Integration] | None | Unset = UNSET
    object_: Literal["fine_tuning.job"] | Unset = "fine_tuning.job"
    preemptible: bool | Unset = True
    priority: int | Unset = 0
    result_files: list[str] | Unset = UNSET
    usage: JobUsage | Unset = UNSET
    waiting: None | Unset | Waiting = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.execution import Execution  # noqa: PLC0415
        from ..models.job_budget import JobBudget  # noqa: PLC0415
        from ..models.job_error import JobError  # noqa: PLC0415
        from ..models.job_metadata_type_0 import JobMetadataType0  # noqa: PLC0415
        from ..models.waiting import Waiting  # noqa: PLC0415

        created_at = self.created_at

        error: dict[str, Any] | None
        if isinstance(self.error, JobError):
            error = self.error.to_dict()
        else:
            error = self.error

        fine_tuned_model: None | str
        fine_tuned_model = self.fine_tuned_model

        finished_at: int | None
        finished_at = self.finished_at

        hyperparameters = self.hyperparameters.to_dict()

        id = self.id

        metadata: dict[str, Any] | None
        if isinstance(self.metadata, JobMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        method = self.method.to_dict()

        model = self.model

        organization_id = self.organization_id

        resources = self.resources.to_dict()

        seed = self.seed

        status: str = self.status

        steps_done = self.steps_done

        suffix: None | str
        suffix = self.suffix

        total_steps = self.total_steps

        trained_tokens: int | None
        trained_tokens = self.trained_tokens

        training_file = self.training_file

        validation_file: None | str
        validation_file = self.validation_file

        budget: dict[str, Any] | None | Unset
        if isinstance(self.budget, Unset):
            budget = UNSET
        elif isinstance(self.budget, JobBudget):
            budget = self.budget.to_dict()
        else:
            budget = self.budget

        budget_alert: None | str | Unset
        if isinstance(self.budget_alert, Unset):
            budget_alert = UNSET
        elif isinstance(self.budget_alert, str):
            budget_alert = self.budget_alert
        else:
            budget_alert = self.budget_alert

        estimated_finish: int | None | Unset
        if isinstance(self.estimated_finish, Unset):
            estimated_finish = UNSET
        else:
            estimated_finish = self.estimated_finish

        execution: dict[str, Any] | None | Unset
        if isinstance(self.execution, Unset):
            execution = UNSET
        elif isinstance(self.execution, Execution):
            execution = self.execution.to_dict()
        else:
            execution = self.execution

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

        object_ = self.object_

        preemptible = self.preemptible

        priority = self.priority

        result_files: list[str] | Unset = UNSET
        if not isinstance(self.result_files, Unset):
            result_files = self.result_files

        usage: dict[str, Any] | Unset = UNSET
        if not isinstance(self.usage, Unset):
            usage = self.usage.to_dict()

        waiting: dict[str, Any] | None | Unset
        if isinstance(self.waiting, Unset):
            waiting = UNSET
        elif isinstance(self.waiting, Waiting):
            waiting = self.waiting.to_dict()
        else:
            waiting = self.waiting

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "error": error,
                "fine_tuned_model": fine_tuned_model,
                "finished_at": finished_at,
                "hyperparameters": hyperparameters,
                "id": id,
                "metadata": metadata,
                "method": method,
                "model": model,
                "organization_id": organization_id,
                "resources": resources,
                "seed": seed,
                "status": status,
                "steps_done": steps_done,
                "suffix": suffix,
                "total_steps": total_steps,
                "trained_tokens": trained_tokens,
                "training_file": training_file,
                "validation_file": validation_file,
            }
        )
        if budget is not UNSET:
            field_dict["budget"] = budget
        if budget_alert is not UNSET:
            field_dict["budget_alert"] = budget_alert
        if estimated_finish is not UNSET:
            field_dict["estimated_finish"] = estimated_finish
        if execution is not UNSET:
            field_dict["execution"] = execution
        if integrations is not UNSET:
            field_dict["integrations"] = integrations
        if object_ is not UNSET:
            field_dict["object"] = object_
        if preemptible is not UNSET:
            field_dict["preemptible"] = preemptible
        if priority is not UNSET:
            field_dict["priority"] = priority
        if result_files is not UNSET:
            field_dict["result_files"] = result_files
        if usage is not UNSET:
            field_dict["usage"] = usage
        if waiting is not UNSET:
            field_dict["waiting"] = waiting

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.execution import Execution  # noqa: PLC0415
        from ..models.integration import Integration  # noqa: PLC0415
        from ..models.job_budget import JobBudget  # noqa: PLC0415
        from ..models.job_error import JobError  # noqa: PLC0415
        from ..models.job_hyperparameters import JobHyperparameters  # noqa: PLC0415
        from ..models.job_metadata_type_0 import JobMetadataType0  # noqa: PLC0415
        from ..models.job_method import JobMethod  # noqa: PLC0415
        from ..models.job_usage import JobUsage  # noqa: PLC0415
        from ..models.resources import Resources  # noqa: PLC0415
        from ..models.waiting import Waiting  # noqa: PLC0415

        d = dict(src_dict)
        created_at = d.pop("created_at")

        def _parse_error(data: object) -> JobError | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = JobError.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JobError | None, data)

        error = _parse_error(d.pop("error"))

        def _parse_fine_tuned_model(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        fine_tuned_model = _parse_fine_tuned_model(d.pop("fine_tuned_model"))

        def _parse_finished_at(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))

        hyperparameters = JobHyperparameters.from_dict(d.pop("hyperparameters"))

        id = d.pop("id")

        def _parse_metadata(data: object) -> JobMetadataType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = JobMetadataType0.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JobMetadataType0 | None, data)

        metadata = _parse_metadata(d.pop("metadata"))

        method = JobMethod.from_dict(d.pop("method"))

        model = d.pop("model")

        organization_id = d.pop("organization_id")

        resources = Resources.from_dict(d.pop("resources"))

        seed = d.pop("seed")

        status = check_job_status(d.pop("status"))

        steps_done = d.pop("steps_done")

        def _parse_suffix(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        suffix = _parse_suffix(d.pop("suffix"))

        total_steps = d.pop("total_steps")

        def _parse_trained_tokens(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        trained_tokens = _parse_trained_tokens(d.pop("trained_tokens"))

        training_file = d.pop("training_file")

        def _parse_validation_file(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        validation_file = _parse_validation_file(d.pop("validation_file"))

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

        def _parse_budget_alert(data: object) -> JobBudgetAlertType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                budget_alert_type_0 = check_job_budget_alert_type_0(data)

                return budget_alert_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JobBudgetAlertType0 | None | Unset, data)

        budget_alert = _parse_budget_alert(d.pop("budget_alert", UNSET))

        def _parse_estimated_finish(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        estimated_finish = _parse_estimated_finish(d.pop("estimated_finish", UNSET))

        def _parse_execution(data: object) -> Execution | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                execution_type_0 = Execution.from_dict(data)

                return execution_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Execution | None | Unset, data)

        execution = _parse_execution(d.pop("execution", UNSET))

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

        object_ = cast(Literal["fine_tuning.job"] | Unset, d.pop("object", UNSET))
        if object_ != "fine_tuning.job" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'fine_tuning.job', got '{object_}'")

        preemptible = d.pop("preemptible", UNSET)

        priority = d.pop("priority", UNSET)

        result_files = cast(list[str], d.pop("result_files", UNSET))

        _usage = d.pop("usage", UNSET)
        usage: JobUsage | Unset
        if isinstance(_usage, Unset):
            usage = UNSET
        else:
            usage = JobUsage.from_dict(_usage)

        def _parse_waiting(data: object) -> None | Unset | Waiting:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                waiting_type_0 = Waiting.from_dict(data)

                return waiting_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | Waiting, data)

        waiting = _parse_waiting(d.pop("waiting", UNSET))

        job = cls(
            created_at=created_at,
            error=error,
            fine_tuned_model=fine_tuned_model,
            finished_at=finished_at,
            hyperparameters=hyperparameters,
            id=id,
            metadata=metadata,
            method=method,
            model=model,
            organization_id=organization_id,
            resources=resources,
            seed=seed,
            status=status,
            steps_done=steps_done,
            suffix=suffix,
            total_steps=total_steps,
            trained_tokens=trained_tokens,
            training_file=training_file,
            validation_file=validation_file,
            budget=budget,
            budget_alert=budget_alert,
            estimated_finish=estimated_finish,
            execution=execution,
            integrations=integrations,
            object_=object_,
            preemptible=preemptible,
            priority=priority,
            result_files=result_files,
            usage=usage,
            waiting=waiting,
        )

        job.additional_properties = d
        return job

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
