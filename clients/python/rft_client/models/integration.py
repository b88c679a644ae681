# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.wandb_spec import WandbSpec


T = TypeVar("T", bound="Integration")


@_attrs_define
class Integration:
    """OpenAI's job ``integrations`` item (only ``wandb`` exists there), plus ``api_key_secret``: the project secret
    whose value is the W&B API key this job's run logs with (never the worker's own key then).

        Attributes:
            type_ (Literal['wandb']):
            api_key_secret (None | str | Unset): The name of a secret of the job's project (POST /v1/secrets) holding the
                W&B API key the run logs with; unset: the worker's own WANDB_API_KEY, or offline files on the worker without
                one.
            wandb (WandbSpec | Unset): OpenAI's ``integrations[].wandb``: where the job's W&B run goes.
    """

    type_: Literal["wandb"]
    api_key_secret: None | str | Unset = UNSET
    wandb: WandbSpec | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        type_ = self.type_

        api_key_secret: None | str | Unset
        if isinstance(self.api_key_secret, Unset):
            api_key_secret = UNSET
        else:
            api_key_secret = self.api_key_secret

        wandb: dict[str, Any] | Unset = UNSET
        if not isinstance(self.wandb, Unset):
            wandb = self.wandb.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "type": type_,
            }
        )
        if api_key_secret is not UNSET:
            field_dict["api_key_secret"] = api_key_secret
        if wandb is not UNSET:
            field_dict["wandb"] = wandb

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.wandb_spec import WandbSpec  # noqa: PLC0415

        d = dict(src_dict)
        type_ = cast(Literal["wandb"], d.pop("type"))
        if type_ != "wandb":
            raise ValueError(f"type must match const 'wandb', got '{type_}'")

        def _parse_api_key_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        api_key_secret = _parse_api_key_secret(d.pop("api_key_secret", UNSET))

        _wandb = d.pop("wandb", UNSET)
        wandb: WandbSpec | Unset
        if isinstance(_wandb, Unset):
            wandb = UNSET
        else:
            wandb = WandbSpec.from_dict(_wandb)

        integration = cls(
            type_=type_,
            api_key_secret=api_key_secret,
            wandb=wandb,
        )

        return integration
