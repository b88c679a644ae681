# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.checkpoint_metrics import CheckpointMetrics


T = TypeVar("T", bound="Checkpoint")


@_attrs_define
class Checkpoint:
    """A saved LoRA adapter (``fine_tuning.job.checkpoint``); its content is a tar of the PEFT files.

    Attributes:
        created_at (int):
        fine_tuned_model_checkpoint (str):
        fine_tuning_job_id (str):
        id (str):
        metrics (CheckpointMetrics): The step a checkpoint was saved at, in brief (a pause before any step saves none of
            these).
        step_number (int):
        best (bool | Unset): The job's checkpoint with the highest validation reward (needs a validation_file). Default:
            False.
        object_ (Literal['fine_tuning.job.checkpoint'] | Unset):  Default: 'fine_tuning.job.checkpoint'.
    """

    created_at: int
    fine_tuned_model_checkpoint: str
    fine_tuning_job_id: str
    id: str
    metrics: CheckpointMetrics
    step_number: int
    best: bool | Unset = False
    object_: Literal["fine_tuning.job.checkpoint"] | Unset = "fine_tuning.job.checkpoint"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        fine_tuned_model_checkpoint = self.fine_tuned_model_checkpoint

        fine_tuning_job_id = self.fine_tuning_job_id

        id = self.id

        metrics = self.metrics.to_dict()

        step_number = self.step_number

        best = self.best

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "fine_tuned_model_checkpoint": fine_tuned_model_checkpoint,
                "fine_tuning_job_id": fine_tuning_job_id,
                "id": id,
                "metrics": metrics,
                "step_number": step_number,
            }
        )
        if best is not UNSET:
            field_dict["best"] = best
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.checkpoint_metrics import CheckpointMetrics  # noqa: PLC0415

        d = dict(src_dict)
        created_at = d.pop("created_at")

        fine_tuned_model_checkpoint = d.pop("fine_tuned_model_checkpoint")

        fine_tuning_job_id = d.pop("fine_tuning_job_id")

        id = d.pop("id")

        metrics = CheckpointMetrics.from_dict(d.pop("metrics"))

        step_number = d.pop("step_number")

        best = d.pop("best", UNSET)

        object_ = cast(Literal["fine_tuning.job.checkpoint"] | Unset, d.pop("object", UNSET))
        if object_ != "fine_tuning.job.checkpoint" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'fine_tuning.job.checkpoint', got '{object_}'")

        checkpoint = cls(
            created_at=created_at,
            fine_tuned_model_checkpoint=fine_tuned_model_checkpoint,
            fine_tuning_job_id=fine_tuning_job_id,
            id=id,
            metrics=metrics,
            step_number=step_number,
            best=best,
            object_=object_,
        )

        checkpoint.additional_properties = d
        return checkpoint

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
