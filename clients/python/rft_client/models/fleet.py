# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.fleet_worker import FleetWorker


T = TypeVar("T", bound="Fleet")


@_attrs_define
class Fleet:
    """
    Attributes:
        queued_jobs (int): Jobs waiting for a worker.
        waiting_sessions (int): Active sessions with work pending and no worker.
        workers (list[FleetWorker]): Workers holding work now, the most tenants first.
        object_ (str | Unset):  Default: 'fleet'.
    """

    queued_jobs: int
    waiting_sessions: int
    workers: list[FleetWorker]
    object_: str | Unset = "fleet"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        queued_jobs = self.queued_jobs

        waiting_sessions = self.waiting_sessions

        workers = []
        for workers_item_data in self.workers:
            workers_item = workers_item_data.to_dict()
            workers.append(workers_item)

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "queued_jobs": queued_jobs,
                "waiting_sessions": waiting_sessions,
                "workers": workers,
            }
        )
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.fleet_worker import FleetWorker  # noqa: PLC0415

        d = dict(src_dict)
        queued_jobs = d.pop("queued_jobs")

        waiting_sessions = d.pop("waiting_sessions")

        workers = []
        _workers = d.pop("workers")
        for workers_item_data in _workers:
            workers_item = FleetWorker.from_dict(workers_item_data)

            workers.append(workers_item)

        object_ = d.pop("object", UNSET)

        fleet = cls(
            queued_jobs=queued_jobs,
            waiting_sessions=waiting_sessions,
            workers=workers,
            object_=object_,
        )

        fleet.additional_properties = d
        return fleet

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
