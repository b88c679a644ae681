# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.job_event_level import JobEventLevel, check_job_event_level
from ..models.job_event_type import JobEventType, check_job_event_type
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.cost import Cost
    from ..models.step_metrics import StepMetrics


T = TypeVar("T", bound="JobEvent")


@_attrs_define
class JobEvent:
    """A status change or message (``type: message``) or one step's metrics (``type: metrics``).

    Attributes:
        created_at (int):
        id (str):
        level (JobEventLevel):
        message (str):
        type_ (JobEventType):
        cost (Cost | None | Unset): A metrics event: the job's cost when the step was recorded.
        data (None | StepMetrics | Unset): A metrics event's step metrics; null for a message.
        object_ (Literal['fine_tuning.job.event'] | Unset):  Default: 'fine_tuning.job.event'.
    """

    created_at: int
    id: str
    level: JobEventLevel
    message: str
    type_: JobEventType
    cost: Cost | None | Unset = UNSET
    data: None | StepMetrics | Unset = UNSET
    object_: Literal["fine_tuning.job.event"] | Unset = "fine_tuning.job.event"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.cost import Cost  # noqa: PLC0415
        from ..models.step_metrics import StepMetrics  # noqa: PLC0415

        created_at = self.created_at

        id = self.id

        level: str = self.level

        message = self.message

        type_: str = self.type_

        cost: dict[str, Any] | None | Unset
        if isinstance(self.cost, Unset):
            cost = UNSET
        elif isinstance(self.cost, Cost):
            cost = self.cost.to_dict()
        else:
            cost = self.cost

        data: dict[str, Any] | None | Unset
        if isinstance(self.data, Unset):
            data = UNSET
        elif isinstance(self.data, StepMetrics):
            data = self.data.to_dict()
        else:
            data = self.data

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "level": level,
                "message": message,
                "type": type_,
            }
        )
        if cost is not UNSET:
            field_dict["cost"] = cost
        if data is not UNSET:
            field_dict["data"] = data
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.cost import Cost  # noqa: PLC0415
        from ..models.step_metrics import StepMetrics  # noqa: PLC0415

        d = dict(src_dict)
        created_at = d.pop("created_at")

        id = d.pop("id")

        level = check_job_event_level(d.pop("level"))

        message = d.pop("message")

        type_ = check_job_event_type(d.pop("type"))

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

        def _parse_data(data: object) -> None | StepMetrics | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                data_type_0 = StepMetrics.from_dict(data)

                return data_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StepMetrics | Unset, data)

        data = _parse_data(d.pop("data", UNSET))

        object_ = cast(Literal["fine_tuning.job.event"] | Unset, d.pop("object", UNSET))
        if object_ != "fine_tuning.job.event" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'fine_tuning.job.event', got '{object_}'")

        job_event = cls(
            created_at=created_at,
            id=id,
            level=level,
            message=message,
            type_=type_,
            cost=cost,
            data=data,
            object_=object_,
        )

        job_event.additional_properties = d
        return job_event

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
