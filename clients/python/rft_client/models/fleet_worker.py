# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="FleetWorker")


@_attrs_define
class FleetWorker:
    """
    Attributes:
        base_models (list[str]): The base models its jobs and sessions' runs train.
        jobs (int): Jobs it trains now (node 0 of a multi-node job).
        projects (int): How many projects its tenants belong to.
        sessions (int): Training-API sessions it serves now.
        tenants (int): Jobs and sessions together: more than 1 is a pool sharing its device.
        worker_id (str): The worker process (host:pid) as its leases name it.
        serving (list[str] | Unset): The base models it serves as an inference replica started on demand (it trains
            nothing meanwhile); its device time is usage of kind serving.
    """

    base_models: list[str]
    jobs: int
    projects: int
    sessions: int
    tenants: int
    worker_id: str
    serving: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        base_models = self.base_models

        jobs = self.jobs

        projects = self.projects

        sessions = self.sessions

        tenants = self.tenants

        worker_id = self.worker_id

        serving: list[str] | Unset = UNSET
        if not isinstance(self.serving, Unset):
            serving = self.serving

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "base_models": base_models,
                "jobs": jobs,
                "projects": projects,
                "sessions": sessions,
                "tenants": tenants,
                "worker_id": worker_id,
            }
        )
        if serving is not UNSET:
            field_dict["serving"] = serving

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        base_models = cast(list[str], d.pop("base_models"))

        jobs = d.pop("jobs")

        projects = d.pop("projects")

        sessions = d.pop("sessions")

        tenants = d.pop("tenants")

        worker_id = d.pop("worker_id")

        serving = cast(list[str], d.pop("serving", UNSET))

        fleet_worker = cls(
            base_models=base_models,
            jobs=jobs,
            projects=projects,
            sessions=sessions,
            tenants=tenants,
            worker_id=worker_id,
            serving=serving,
        )

        fleet_worker.additional_properties = d
        return fleet_worker

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
