# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.run_response_metadata import RunResponseMetadata
    from ..models.run_response_model_grader_token_usage_per_model import RunResponseModelGraderTokenUsagePerModel
    from ..models.run_response_sub_rewards import RunResponseSubRewards


T = TypeVar("T", bound="RunResponse")


@_attrs_define
class RunResponse:
    """
    Attributes:
        metadata (RunResponseMetadata):
        model_grader_token_usage_per_model (RunResponseModelGraderTokenUsagePerModel):
        reward (float):
        sub_rewards (RunResponseSubRewards):
    """

    metadata: RunResponseMetadata
    model_grader_token_usage_per_model: RunResponseModelGraderTokenUsagePerModel
    reward: float
    sub_rewards: RunResponseSubRewards
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        metadata = self.metadata.to_dict()

        model_grader_token_usage_per_model = self.model_grader_token_usage_per_model.to_dict()

        reward = self.reward

        sub_rewards = self.sub_rewards.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "metadata": metadata,
                "model_grader_token_usage_per_model": model_grader_token_usage_per_model,
                "reward": reward,
                "sub_rewards": sub_rewards,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.run_response_metadata import RunResponseMetadata  # noqa: PLC0415
        from ..models.run_response_model_grader_token_usage_per_model import RunResponseModelGraderTokenUsagePerModel  # noqa: PLC0415
        from ..models.run_response_sub_rewards import RunResponseSubRewards  # noqa: PLC0415

        d = dict(src_dict)
        metadata = RunResponseMetadata.from_dict(d.pop("metadata"))

        model_grader_token_usage_per_model = RunResponseModelGraderTokenUsagePerModel.from_dict(
            d.pop("model_grader_token_usage_per_model")
        )

        reward = d.pop("reward")

        sub_rewards = RunResponseSubRewards.from_dict(d.pop("sub_rewards"))

        run_response = cls(
            metadata=metadata,
            model_grader_token_usage_per_model=model_grader_token_usage_per_model,
            reward=reward,
            sub_rewards=sub_rewards,
        )

        run_response.additional_properties = d
        return run_response

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
