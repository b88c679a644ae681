# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.job_usage import JobUsage
    from ..models.run_checkpoint import RunCheckpoint


T = TypeVar("T", bound="TrainingRunObject")


@_attrs_define
class TrainingRunObject:
    """
    Attributes:
        base_model (str):
        checkpoints (list[RunCheckpoint]):
        created_at (int):
        id (str): <session>:train:<n>, as the tinker SDK names a training client.
        last_request_at (int):
        lora_rank (int):
        session_id (str):
        status (str): Its session's state: active, finished, expired or lost.
        steps (int): optim_step calls done.
        error (None | str | Unset): Why the session is not active, when it says.
        object_ (Literal['training_run'] | Unset):  Default: 'training_run'.
        usage (JobUsage | Unset): What a job used, summed over its attempts (a killed and resumed job: both attempts,
            each once).
    """

    base_model: str
    checkpoints: list[RunCheckpoint]
    created_at: int
    id: str
    last_request_at: int
    lora_rank: int
    session_id: str
    status: str
    steps: int
    error: None | str | Unset = UNSET
    object_: Literal["training_run"] | Unset = "training_run"
    usage: JobUsage | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        base_model = self.base_model

        checkpoints = []
        for checkpoints_item_data in self.checkpoints:
            checkpoints_item = checkpoints_item_data.to_dict()
            checkpoints.append(checkpoints_item)

        created_at = self.created_at

        id = self.id

        last_request_at = self.last_request_at

        lora_rank = self.lora_rank

        session_id = self.session_id

        status = self.status

        steps = self.steps

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        object_ = self.object_

        usage: dict[str, Any] | Unset = UNSET
        if not isinstance(self.usage, Unset):
            usage = self.usage.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "base_model": base_model,
                "checkpoints": checkpoints,
                "created_at": created_at,
                "id": id,
                "last_request_at": last_request_at,
                "lora_rank": lora_rank,
                "session_id": session_id,
                "status": status,
                "steps": steps,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if object_ is not UNSET:
            field_dict["object"] = object_
        if usage is not UNSET:
            field_dict["usage"] = usage

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.job_usage import JobUsage  # noqa: PLC0415
        from ..models.run_checkpoint import RunCheckpoint  # noqa: PLC0415

        d = dict(src_dict)
        base_model = d.pop("base_model")

        checkpoints = []
        _checkpoints = d.pop("checkpoints")
        for checkpoints_item_data in _checkpoints:
            checkpoints_item = RunCheckpoint.from_dict(checkpoints_item_data)

            checkpoints.append(checkpoints_item)

        created_at = d.pop("created_at")

        id = d.pop("id")

        last_request_at = d.pop("last_request_at")

        lora_rank = d.pop("lora_rank")

        session_id = d.pop("session_id")

        status = d.pop("status")

        steps = d.pop("steps")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        object_ = cast(Literal["training_run"] | Unset, d.pop("object", UNSET))
        if object_ != "training_run" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'training_run', got '{object_}'")

        _usage = d.pop("usage", UNSET)
        usage: JobUsage | Unset
        if isinstance(_usage, Unset):
            usage = UNSET
        else:
            usage = JobUsage.from_dict(_usage)

        training_run_object = cls(
            base_model=base_model,
            checkpoints=checkpoints,
            created_at=created_at,
            id=id,
            last_request_at=last_request_at,
            lora_rank=lora_rank,
            session_id=session_id,
            status=status,
            steps=steps,
            error=error,
            object_=object_,
            usage=usage,
        )

        training_run_object.additional_properties = d
        return training_run_object

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
