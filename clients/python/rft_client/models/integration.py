# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.wandb_spec import WandbSpec


T = TypeVar("T", bound="Integration")


@_attrs_define
class Integration:
    """OpenAI's job ``integrations`` item (only ``wandb`` exists there).

    Attributes:
        type_ (Literal['wandb']):
        wandb (WandbSpec): OpenAI's ``integrations[].wandb``: where the job's W&B run goes.
    """

    type_: Literal["wandb"]
    wandb: WandbSpec

    def to_dict(self) -> dict[str, Any]:
        type_ = self.type_

        wandb = self.wandb.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "type": type_,
                "wandb": wandb,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.wandb_spec import WandbSpec  # noqa: PLC0415

        d = dict(src_dict)
        type_ = cast(Literal["wandb"], d.pop("type"))
        if type_ != "wandb":
            raise ValueError(f"type must match const 'wandb', got '{type_}'")

        wandb = WandbSpec.from_dict(d.pop("wandb"))

        integration = cls(
            type_=type_,
            wandb=wandb,
        )

        return integration
