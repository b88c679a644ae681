# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.sample_rewards import SampleRewards
    from ..models.trajectory_span import TrajectorySpan


T = TypeVar("T", bound="Sample")


@_attrs_define
class Sample:
    """One logged rollout: the prompt, the completion, its rewards (total and per grader) and advantage.

    Attributes:
        advantage (float):
        completion (str):
        prompt (Any): The training row's prompt (a string) or messages (a list).
        reward (float | None): Total reward; null when no grader could score it.
        completion_tokens (int | None | Unset):
        ended (None | str | Unset): How the episode ended: done, max_turns, max_total_tokens or length (multi-turn
            only).
        policy_version (int | None | Unset): max_staleness > 0: the policy version (optimizer steps taken) whose weights
            sampled it; null when the weights being trained sampled it.
        rewards (SampleRewards | Unset): Per grader; null = not applicable.
        trajectory (list[TrajectorySpan] | None | Unset): A multi-turn episode turn by turn (null for single-turn jobs).
    """

    advantage: float
    completion: str
    prompt: Any
    reward: float | None
    completion_tokens: int | None | Unset = UNSET
    ended: None | str | Unset = UNSET
    policy_version: int | None | Unset = UNSET
    rewards: SampleRewards | Unset = UNSET
    trajectory: list[TrajectorySpan] | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        advantage = self.advantage

        completion = self.completion

        prompt = self.prompt

        reward: float | None
        reward = self.reward

        completion_tokens: int | None | Unset
        if isinstance(self.completion_tokens, Unset):
            completion_tokens = UNSET
        else:
            completion_tokens = self.completion_tokens

        ended: None | str | Unset
        if isinstance(self.ended, Unset):
            ended = UNSET
        else:
            ended = self.ended

        policy_version: int | None | Unset
        if isinstance(self.policy_version, Unset):
            policy_version = UNSET
        else:
            policy_version = self.policy_version

        rewards: dict[str, Any] | Unset = UNSET
        if not isinstance(self.rewards, Unset):
            rewards = self.rewards.to_dict()

        trajectory: list[dict[str, Any]] | None | Unset
        if isinstance(self.trajectory, Unset):
            trajectory = UNSET
        elif isinstance(self.trajectory, list):
            trajectory = []
            for trajectory_type_0_item_data in self.trajectory:
                trajectory_type_0_item = trajectory_type_0_item_data.to_dict()
                trajectory.append(trajectory_type_0_item)

        else:
            trajectory = self.trajectory

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "advantage": advantage,
                "completion": completion,
                "prompt": prompt,
                "reward": reward,
            }
        )
        if completion_tokens is not UNSET:
            field_dict["completion_tokens"] = completion_tokens
        if ended is not UNSET:
            field_dict["ended"] = ended
        if policy_version is not UNSET:
            field_dict["policy_version"] = policy_version
        if rewards is not UNSET:
            field_dict["rewards"] = rewards
        if trajectory is not UNSET:
            field_dict["trajectory"] = trajectory

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.sample_rewards import SampleRewards  # noqa: PLC0415
        from ..models.trajectory_span import TrajectorySpan  # noqa: PLC0415

        d = dict(src_dict)
        advantage = d.pop("advantage")

        completion = d.pop("completion")

        prompt = d.pop("prompt")

        def _parse_reward(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        reward = _parse_reward(d.pop("reward"))

        def _parse_completion_tokens(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        completion_tokens = _parse_completion_tokens(d.pop("completion_tokens", UNSET))

        def _parse_ended(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        ended = _parse_ended(d.pop("ended", UNSET))

        def _parse_policy_version(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        policy_version = _parse_policy_version(d.pop("policy_version", UNSET))

        _rewards = d.pop("rewards", UNSET)
        rewards: SampleRewards | Unset
        if isinstance(_rewards, Unset):
            rewards = UNSET
        else:
            rewards = SampleRewards.from_dict(_rewards)

        def _parse_trajectory(data: object) -> list[TrajectorySpan] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                trajectory_type_0 = []
                _trajectory_type_0 = data
                for trajectory_type_0_item_data in _trajectory_type_0:
                    trajectory_type_0_item = TrajectorySpan.from_dict(trajectory_type_0_item_data)

                    trajectory_type_0.append(trajectory_type_0_item)

                return trajectory_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[TrajectorySpan] | None | Unset, data)

        trajectory = _parse_trajectory(d.pop("trajectory", UNSET))

        sample = cls(
            advantage=advantage,
            completion=completion,
            prompt=prompt,
            reward=reward,
            completion_tokens=completion_tokens,
            ended=ended,
            policy_version=policy_version,
            rewards=rewards,
            trajectory=trajectory,
        )

        sample.additional_properties = d
        return sample

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
