# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.cost import Cost
    from ..models.usage_bucket_device_seconds_by_kind import UsageBucketDeviceSecondsByKind


T = TypeVar("T", bound="UsageBucket")


@_attrs_define
class UsageBucket:
    """The usage of one day (``group_by=day``), one job (``group_by=job``; ``job_id`` null: what belongs to no job,
    eval runs, training sessions and inference) or, for the operator, one project.

        Attributes:
            end_time (int): Unix seconds: the next day's start, or the group's last contact.
            start_time (int): Unix seconds: the day's start, or the group's first attempt's claim.
            attempt (int | None | Unset): The job's attempt (group_by=attempt: its lease epoch).
            attempts (int | Unset): Attempts metered (claims of a job that ran). Default: 0.
            cost (Cost | None | Unset): What it cost at the prices in force (device-hours where none is set); computed from
                these counters, so a job's is the sum of its attempts'.
            day (None | str | Unset): UTC YYYY-MM-DD (group_by=day).
            device_seconds (float | Unset): Devices × seconds from each attempt's claim to its worker's last contact (all
                nodes). Default: 0.0.
            device_seconds_by_kind (UsageBucketDeviceSecondsByKind | Unset): device_seconds by what the devices are: a GPU's
                name, 'cpu (model)'; 'unknown' before the worker reported it.
            eval_seconds (float | Unset): Wall-clock seconds of validation. Default: 0.0.
            eval_tokens (int | Unset): Prompt and completion tokens of eval runs' samples. Default: 0.
            grader_calls (int | Unset): Samples scored × reward columns (graders). Default: 0.
            grader_seconds (float | Unset): Wall-clock seconds the steps spent scoring. Default: 0.0.
            inference_tokens (int | Unset): Tokens of /v1/chat/completions and /v1/completions answers. Default: 0.
            job_id (None | str | Unset): The job (group_by=job or attempt).
            object_ (Literal['usage.bucket'] | Unset):  Default: 'usage.bucket'.
            project_id (None | str | Unset): The project (the admin view only).
            sampled_tokens (int | Unset): Completion tokens sampled, those dropped by dynamic sampling included. Default: 0.
            sampling_seconds (float | Unset): Wall-clock seconds the steps spent sampling. Default: 0.0.
            steps (int | Unset): Optimizer steps run, each attempt's own (a resumed attempt's re-run steps too). Default: 0.
            trained_tokens (int | Unset): Completion tokens of the batches the updates trained on. Default: 0.
            training_seconds (float | Unset): Wall-clock seconds the steps spent in the update. Default: 0.0.
    """

    end_time: int
    start_time: int
    attempt: int | None | Unset = UNSET
    attempts: int | Unset = 0
    cost: Cost | None | Unset = UNSET
    day: None | str | Unset = UNSET
    device_seconds: float | Unset = 0.0
    device_seconds_by_kind: UsageBucketDeviceSecondsByKind | Unset = UNSET
    eval_seconds: float | Unset = 0.0
    eval_tokens: int | Unset = 0
    grader_calls: int | Unset = 0
    grader_seconds: float | Unset = 0.0
    inference_tokens: int | Unset = 0
    job_id: None | str | Unset = UNSET
    object_: Literal["usage.bucket"] | Unset = "usage.bucket"
    project_id: None | str | Unset = UNSET
    sampled_tokens: int | Unset = 0
    sampling_seconds: float | Unset = 0.0
    steps: int | Unset = 0
    trained_tokens: int | Unset = 0
    training_seconds: float | Unset = 0.0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.cost import Cost  # noqa: PLC0415

        end_time = self.end_time

        start_time = self.start_time

        attempt: int | None | Unset
        if isinstance(self.attempt, Unset):
            attempt = UNSET
        else:
            attempt = self.attempt

        attempts = self.attempts

        cost: dict[str, Any] | None | Unset
        if isinstance(self.cost, Unset):
            cost = UNSET
        elif isinstance(self.cost, Cost):
            cost = self.cost.to_dict()
        else:
            cost = self.cost

        day: None | str | Unset
        if isinstance(self.day, Unset):
            day = UNSET
        else:
            day = self.day

        device_seconds = self.device_seconds

        device_seconds_by_kind: dict[str, Any] | Unset = UNSET
        if not isinstance(self.device_seconds_by_kind, Unset):
            device_seconds_by_kind = self.device_seconds_by_kind.to_dict()

        eval_seconds = self.eval_seconds

        eval_tokens = self.eval_tokens

        grader_calls = self.grader_calls

        grader_seconds = self.grader_seconds

        inference_tokens = self.inference_tokens

        job_id: None | str | Unset
        if isinstance(self.job_id, Unset):
            job_id = UNSET
        else:
            job_id = self.job_id

        object_ = self.object_

        project_id: None | str | Unset
        if isinstance(self.project_id, Unset):
            project_id = UNSET
        else:
            project_id = self.project_id

        sampled_tokens = self.sampled_tokens

        sampling_seconds = self.sampling_seconds

        steps = self.steps

        trained_tokens = self.trained_tokens

        training_seconds = self.training_seconds

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "end_time": end_time,
                "start_time": start_time,
            }
        )
        if attempt is not UNSET:
            field_dict["attempt"] = attempt
        if attempts is not UNSET:
            field_dict["attempts"] = attempts
        if cost is not UNSET:
            field_dict["cost"] = cost
        if day is not UNSET:
            field_dict["day"] = day
        if device_seconds is not UNSET:
            field_dict["device_seconds"] = device_seconds
        if device_seconds_by_kind is not UNSET:
            field_dict["device_seconds_by_kind"] = device_seconds_by_kind
        if eval_seconds is not UNSET:
            field_dict["eval_seconds"] = eval_seconds
        if eval_tokens is not UNSET:
            field_dict["eval_tokens"] = eval_tokens
        if grader_calls is not UNSET:
            field_dict["grader_calls"] = grader_calls
        if grader_seconds is not UNSET:
            field_dict["grader_seconds"] = grader_seconds
        if inference_tokens is not UNSET:
            field_dict["inference_tokens"] = inference_tokens
        if job_id is not UNSET:
            field_dict["job_id"] = job_id
        if object_ is not UNSET:
            field_dict["object"] = object_
        if project_id is not UNSET:
            field_dict["project_id"] = project_id
        if sampled_tokens is not UNSET:
            field_dict["sampled_tokens"] = sampled_tokens
        if sampling_seconds is not UNSET:
            field_dict["sampling_seconds"] = sampling_seconds
        if steps is not UNSET:
            field_dict["steps"] = steps
        if trained_tokens is not UNSET:
            field_dict["trained_tokens"] = trained_tokens
        if training_seconds is not UNSET:
            field_dict["training_seconds"] = training_seconds

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.cost import Cost  # noqa: PLC0415
        from ..models.usage_bucket_device_seconds_by_kind import UsageBucketDeviceSecondsByKind  # noqa: PLC0415

        d = dict(src_dict)
        end_time = d.pop("end_time")

        start_time = d.pop("start_time")

        def _parse_attempt(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        attempt = _parse_attempt(d.pop("attempt", UNSET))

        attempts = d.pop("attempts", UNSET)

        def _parse_cost(data: object) -> Cost | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                cost_type_0 = Cost.from_dict(data)

                return cost_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Cost | None | Unset, data)

        cost = _parse_cost(d.pop("cost", UNSET))

        def _parse_day(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        day = _parse_day(d.pop("day", UNSET))

        device_seconds = d.pop("device_seconds", UNSET)

        _device_seconds_by_kind = d.pop("device_seconds_by_kind", UNSET)
        device_seconds_by_kind: UsageBucketDeviceSecondsByKind | Unset
        if isinstance(_device_seconds_by_kind, Unset):
            device_seconds_by_kind = UNSET
        else:
            device_seconds_by_kind = UsageBucketDeviceSecondsByKind.from_dict(_device_seconds_by_kind)

        eval_seconds = d.pop("eval_seconds", UNSET)

        eval_tokens = d.pop("eval_tokens", UNSET)

        grader_calls = d.pop("grader_calls", UNSET)

        grader_seconds = d.pop("grader_seconds", UNSET)

        inference_tokens = d.pop("inference_tokens", UNSET)

        def _parse_job_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        job_id = _parse_job_id(d.pop("job_id", UNSET))

        object_ = cast(Literal["usage.bucket"] | Unset, d.pop("object", UNSET))
        if object_ != "usage.bucket" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'usage.bucket', got '{object_}'")

        def _parse_project_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        project_id = _parse_project_id(d.pop("project_id", UNSET))

        sampled_tokens = d.pop("sampled_tokens", UNSET)

        sampling_seconds = d.pop("sampling_seconds", UNSET)

        steps = d.pop("steps", UNSET)

        trained_tokens = d.pop("trained_tokens", UNSET)

        training_seconds = d.pop("training_seconds", UNSET)

        usage_bucket = cls(
            end_time=end_time,
            start_time=start_time,
            attempt=attempt,
            attempts=attempts,
            cost=cost,
            day=day,
            device_seconds=device_seconds,
            device_seconds_by_kind=device_seconds_by_kind,
            eval_seconds=eval_seconds,
            eval_tokens=eval_tokens,
            grader_calls=grader_calls,
            grader_seconds=grader_seconds,
            inference_tokens=inference_tokens,
            job_id=job_id,
            object_=object_,
            project_id=project_id,
            sampled_tokens=sampled_tokens,
            sampling_seconds=sampling_seconds,
            steps=steps,
            trained_tokens=trained_tokens,
            training_seconds=training_seconds,
        )

        usage_bucket.additional_properties = d
        return usage_bucket

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
