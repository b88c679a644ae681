# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="InferenceReplicaView")


@_attrs_define
class InferenceReplicaView:
    """
    Attributes:
        base_model (None | str): None: an INFERENCE_BASE_URL whose model has not answered yet.
        id (str): infr-… (a database row), or config-… (INFERENCE_BASE_URL, INFERENCE_ENDPOINTS).
        origin (str): config (the settings), admin (registered by URL) or started (on demand).
        state (str): requested, starting, ready, stopping, stopped or failed.
        created_at (int | None | Unset):
        device_kind (None | str | Unset):
        healthy (bool | None | Unset): Whether its /models answered this API process's last check.
        in_flight (int | Unset): Requests of this API process in flight to it. Default: 0.
        last_used_at (float | None | Unset):
        object_ (str | Unset):  Default: 'inference.replica'.
        problem (None | str | Unset): Why it is skipped, or why it stopped.
        url (None | str | Unset):
        worker_id (None | str | Unset): The worker that started it.
    """

    base_model: None | str
    id: str
    origin: str
    state: str
    created_at: int | None | Unset = UNSET
    device_kind: None | str | Unset = UNSET
    healthy: bool | None | Unset = UNSET
    in_flight: int | Unset = 0
    last_used_at: float | None | Unset = UNSET
    object_: str | Unset = "inference.replica"
    problem: None | str | Unset = UNSET
    url: None | str | Unset = UNSET
    worker_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        base_model: None | str
        base_model = self.base_model

        id = self.id

        origin = self.origin

        state = self.state

        created_at: int | None | Unset
        if isinstance(self.created_at, Unset):
            created_at = UNSET
        else:
            created_at = self.created_at

        device_kind: None | str | Unset
        if isinstance(self.device_kind, Unset):
            device_kind = UNSET
        else:
            device_kind = self.device_kind

        healthy: bool | None | Unset
        if isinstance(self.healthy, Unset):
            healthy = UNSET
        else:
            healthy = self.healthy

        in_flight = self.in_flight

        last_used_at: float | None | Unset
        if isinstance(self.last_used_at, Unset):
            last_used_at = UNSET
        else:
            last_used_at = self.last_used_at

        object_ = self.object_

        problem: None | str | Unset
        if isinstance(self.problem, Unset):
            problem = UNSET
        else:
            problem = self.problem

        url: None | str | Unset
        if isinstance(self.url, Unset):
            url = UNSET
        else:
            url = self.url

        worker_id: None | str | Unset
        if isinstance(self.worker_id, Unset):
            worker_id = UNSET
        else:
            worker_id = self.worker_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "base_model": base_model,
                "id": id,
                "origin": origin,
                "state": state,
            }
        )
        if created_at is not UNSET:
            field_dict["created_at"] = created_at
        if device_kind is not UNSET:
            field_dict["device_kind"] = device_kind
        if healthy is not UNSET:
            field_dict["healthy"] = healthy
        if in_flight is not UNSET:
            field_dict["in_flight"] = in_flight
        if last_used_at is not UNSET:
            field_dict["last_used_at"] = last_used_at
        if object_ is not UNSET:
            field_dict["object"] = object_
        if problem is not UNSET:
            field_dict["problem"] = problem
        if url is not UNSET:
            field_dict["url"] = url
        if worker_id is not UNSET:
            field_dict["worker_id"] = worker_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_base_model(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        base_model = _parse_base_model(d.pop("base_model"))

        id = d.pop("id")

        origin = d.pop("origin")

        state = d.pop("state")

        def _parse_created_at(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        created_at = _parse_created_at(d.pop("created_at", UNSET))

        def _parse_device_kind(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        device_kind = _parse_device_kind(d.pop("device_kind", UNSET))

        def _parse_healthy(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        healthy = _parse_healthy(d.pop("healthy", UNSET))

        in_flight = d.pop("in_flight", UNSET)

        def _parse_last_used_at(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        last_used_at = _parse_last_used_at(d.pop("last_used_at", UNSET))

        object_ = d.pop("object", UNSET)

        def _parse_problem(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        problem = _parse_problem(d.pop("problem", UNSET))

        def _parse_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        url = _parse_url(d.pop("url", UNSET))

        def _parse_worker_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        worker_id = _parse_worker_id(d.pop("worker_id", UNSET))

        inference_replica_view = cls(
            base_model=base_model,
            id=id,
            origin=origin,
            state=state,
            created_at=created_at,
            device_kind=device_kind,
            healthy=healthy,
            in_flight=in_flight,
            last_used_at=last_used_at,
            object_=object_,
            problem=problem,
            url=url,
            worker_id=worker_id,
        )

        inference_replica_view.additional_properties = d
        return inference_replica_view

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
