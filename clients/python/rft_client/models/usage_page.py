# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.usage import Usage
    from ..models.usage_bucket import UsageBucket


T = TypeVar("T", bound="UsagePage")


@_attrs_define
class UsagePage:
    """Buckets newest first, at most ``limit`` of them; ``totals`` sums every record the filters match.

    Attributes:
        data (list[UsageBucket]):
        has_more (bool): More buckets matched than ``limit``: narrow start_time/end_time.
        totals (Usage): Every counter: a job's, plus what eval runs and inference through this API used.
        object_ (Literal['list'] | Unset):  Default: 'list'.
    """

    data: list[UsageBucket]
    has_more: bool
    totals: Usage
    object_: Literal["list"] | Unset = "list"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = []
        for data_item_data in self.data:
            data_item = data_item_data.to_dict()
            data.append(data_item)

        has_more = self.has_more

        totals = self.totals.to_dict()

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
                "has_more": has_more,
                "totals": totals,
            }
        )
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.usage import Usage  # noqa: PLC0415
        from ..models.usage_bucket import UsageBucket  # noqa: PLC0415

        d = dict(src_dict)
        data = []
        _data = d.pop("data")
        for data_item_data in _data:
            data_item = UsageBucket.from_dict(data_item_data)

            data.append(data_item)

        has_more = d.pop("has_more")

        totals = Usage.from_dict(d.pop("totals"))

        object_ = cast(Literal["list"] | Unset, d.pop("object", UNSET))
        if object_ != "list" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'list', got '{object_}'")

        usage_page = cls(
            data=data,
            has_more=has_more,
            totals=totals,
            object_=object_,
        )

        usage_page.additional_properties = d
        return usage_page

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
