# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="GRPOConfigChatTemplateKwargs")


@_attrs_define
class GRPOConfigChatTemplateKwargs:
    """Extra variables for the model's chat template when prompts are rendered, e.g. {"enable_thinking": false} for Qwen3
    (transformers' apply_chat_template keyword arguments).

    """

    additional_properties: dict[str, bool | float | int | None | str] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            field_dict[prop_name] = prop

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        grpo_config_chat_template_kwargs = cls()

        additional_properties = {}
        for prop_name, prop_dict in d.items():

            def _parse_additional_property(data: object) -> bool | float | int | None | str:
                if data is None:
                    return data
                return cast(bool | float | int | None | str, data)

            additional_property = _parse_additional_property(prop_dict)

            additional_properties[prop_name] = additional_property

        grpo_config_chat_template_kwargs.additional_properties = additional_properties
        return grpo_config_chat_template_kwargs

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> bool | float | int | None | str:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: bool | float | int | None | str) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
