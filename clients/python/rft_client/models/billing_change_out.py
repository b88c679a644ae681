# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="BillingChangeOut")


@_attrs_define
class BillingChangeOut:
    """One change of a price sheet or a budget (``GET /v1/admin/billing/changes``).

    Attributes:
        actor (str):
        created_at (int):
        field (str):
        id (str):
        project_id (str):
        subject (str):
        after (Any | Unset):
        before (Any | Unset):
        object_ (Literal['billing.change'] | Unset):  Default: 'billing.change'.
    """

    actor: str
    created_at: int
    field: str
    id: str
    project_id: str
    subject: str
    after: Any | Unset = UNSET
    before: Any | Unset = UNSET
    object_: Literal["billing.change"] | Unset = "billing.change"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        actor = self.actor

        created_at = self.created_at

        field = self.field

        id = self.id

        project_id = self.project_id

        subject = self.subject

        after = self.after

        before = self.before

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "actor": actor,
                "created_at": created_at,
                "field": field,
                "id": id,
                "project_id": project_id,
                "subject": subject,
            }
        )
        if after is not UNSET:
            field_dict["after"] = after
        if before is not UNSET:
            field_dict["before"] = before
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        actor = d.pop("actor")

        created_at = d.pop("created_at")

        field = d.pop("field")

        id = d.pop("id")

        project_id = d.pop("project_id")

        subject = d.pop("subject")

        after = d.pop("after", UNSET)

        before = d.pop("before", UNSET)

        object_ = cast(Literal["billing.change"] | Unset, d.pop("object", UNSET))
        if object_ != "billing.change" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'billing.change', got '{object_}'")

        billing_change_out = cls(
            actor=actor,
            created_at=created_at,
            field=field,
            id=id,
            project_id=project_id,
            subject=subject,
            after=after,
            before=before,
            object_=object_,
        )

        billing_change_out.additional_properties = d
        return billing_change_out

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
