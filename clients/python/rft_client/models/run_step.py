# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.run_step_reported import RunStepReported


T = TypeVar("T", bound="RunStep")


@_attrs_define
class RunStep:
    """One optimizer step of a run: what its forward_backward calls since the previous step summed to, the step's
    own numbers, and what the client reported for it.

        Attributes:
            step (int):
            created_at (int | None | Unset):
            grad_norm (float | None | Unset):
            learning_rate (float | None | Unset):
            loss (float | None | Unset): Sum of loss:sum over the step's forward_backward calls.
            loss_per_token (float | None | Unset):
            reported (RunStepReported | Unset): The client's own metrics (POSTed).
            tokens (float | None | Unset): Tokens that carried loss in them (tokens:sum).
    """

    step: int
    created_at: int | None | Unset = UNSET
    grad_norm: float | None | Unset = UNSET
    learning_rate: float | None | Unset = UNSET
    loss: float | None | Unset = UNSET
    loss_per_token: float | None | Unset = UNSET
    reported: RunStepReported | Unset = UNSET
    tokens: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        step = self.step

        created_at: int | None | Unset
        if isinstance(self.created_at, Unset):
            created_at = UNSET
        else:
            created_at = self.created_at

        grad_norm: float | None | Unset
        if isinstance(self.grad_norm, Unset):
            grad_norm = UNSET
        else:
            grad_norm = self.grad_norm

        learning_rate: float | None | Unset
        if isinstance(self.learning_rate, Unset):
            learning_rate = UNSET
        else:
            learning_rate = self.learning_rate

        loss: float | None | Unset
        if isinstance(self.loss, Unset):
            loss = UNSET
        else:
            loss = self.loss

        loss_per_token: float | None | Unset
        if isinstance(self.loss_per_token, Unset):
            loss_per_token = UNSET
        else:
            loss_per_token = self.loss_per_token

        reported: dict[str, Any] | Unset = UNSET
        if not isinstance(self.reported, Unset):
            reported = self.reported.to_dict()

        tokens: float | None | Unset
        if isinstance(self.tokens, Unset):
            tokens = UNSET
        else:
            tokens = self.tokens

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "step": step,
            }
        )
        if created_at is not UNSET:
            field_dict["created_at"] = created_at
        if grad_norm is not UNSET:
            field_dict["grad_norm"] = grad_norm
        if learning_rate is not UNSET:
            field_dict["learning_rate"] = learning_rate
        if loss is not UNSET:
            field_dict["loss"] = loss
        if loss_per_token is not UNSET:
            field_dict["loss_per_token"] = loss_per_token
        if reported is not UNSET:
            field_dict["reported"] = reported
        if tokens is not UNSET:
            field_dict["tokens"] = tokens

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.run_step_reported import RunStepReported  # noqa: PLC0415

        d = dict(src_dict)
        step = d.pop("step")

        def _parse_created_at(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        created_at = _parse_created_at(d.pop("created_at", UNSET))

        def _parse_grad_norm(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        grad_norm = _parse_grad_norm(d.pop("grad_norm", UNSET))

        def _parse_learning_rate(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        learning_rate = _parse_learning_rate(d.pop("learning_rate", UNSET))

        def _parse_loss(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        loss = _parse_loss(d.pop("loss", UNSET))

        def _parse_loss_per_token(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        loss_per_token = _parse_loss_per_token(d.pop("loss_per_token", UNSET))

        _reported = d.pop("reported", UNSET)
        reported: RunStepReported | Unset
        if isinstance(_reported, Unset):
            reported = UNSET
        else:
            reported = RunStepReported.from_dict(_reported)

        def _parse_tokens(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        tokens = _parse_tokens(d.pop("tokens", UNSET))

        run_step = cls(
            step=step,
            created_at=created_at,
            grad_norm=grad_norm,
            learning_rate=learning_rate,
            loss=loss,
            loss_per_token=loss_per_token,
            reported=reported,
            tokens=tokens,
        )

        run_step.additional_properties = d
        return run_step

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
