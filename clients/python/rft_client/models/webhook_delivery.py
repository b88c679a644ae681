# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.webhook_delivery_status import WebhookDeliveryStatus, check_webhook_delivery_status
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.delivery_attempt import DeliveryAttempt
    from ..models.webhook_delivery_payload import WebhookDeliveryPayload


T = TypeVar("T", bound="WebhookDelivery")


@_attrs_define
class WebhookDelivery:
    """One event sent to one endpoint, with every attempt so far.

    Attributes:
        attempts (int):
        created_at (int):
        delivered_at (int | None):
        endpoint_id (str):
        event_type (str):
        history (list[DeliveryAttempt]):
        id (str): Also the webhook-id header: receivers dedupe on it.
        job_id (None | str):
        last_error (None | str):
        last_status_code (int | None):
        next_attempt_at (int | None): When the next attempt is due (pending deliveries only).
        payload (WebhookDeliveryPayload):
        status (WebhookDeliveryStatus):
        object_ (Literal['webhook_delivery'] | Unset):  Default: 'webhook_delivery'.
    """

    attempts: int
    created_at: int
    delivered_at: int | None
    endpoint_id: str
    event_type: str
    history: list[DeliveryAttempt]
    id: str
    job_id: None | str
    last_error: None | str
    last_status_code: int | None
    next_attempt_at: int | None
    payload: WebhookDeliveryPayload
    status: WebhookDeliveryStatus
    object_: Literal["webhook_delivery"] | Unset = "webhook_delivery"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempts = self.attempts

        created_at = self.created_at

        delivered_at: int | None
        delivered_at = self.delivered_at

        endpoint_id = self.endpoint_id

        event_type = self.event_type

        history = []
        for history_item_data in self.history:
            history_item = history_item_data.to_dict()
            history.append(history_item)

        id = self.id

        job_id: None | str
        job_id = self.job_id

        last_error: None | str
        last_error = self.last_error

        last_status_code: int | None
        last_status_code = self.last_status_code

        next_attempt_at: int | None
        next_attempt_at = self.next_attempt_at

        payload = self.payload.to_dict()

        status: str = self.status

        object_ = self.object_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempts": attempts,
                "created_at": created_at,
                "delivered_at": delivered_at,
                "endpoint_id": endpoint_id,
                "event_type": event_type,
                "history": history,
                "id": id,
                "job_id": job_id,
                "last_error": last_error,
                "last_status_code": last_status_code,
                "next_attempt_at": next_attempt_at,
                "payload": payload,
                "status": status,
            }
        )
        if object_ is not UNSET:
            field_dict["object"] = object_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.delivery_attempt import DeliveryAttempt  # noqa: PLC0415
        from ..models.webhook_delivery_payload import WebhookDeliveryPayload  # noqa: PLC0415

        d = dict(src_dict)
        attempts = d.pop("attempts")

        created_at = d.pop("created_at")

        def _parse_delivered_at(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        delivered_at = _parse_delivered_at(d.pop("delivered_at"))

        endpoint_id = d.pop("endpoint_id")

        event_type = d.pop("event_type")

        history = []
        _history = d.pop("history")
        for history_item_data in _history:
            history_item = DeliveryAttempt.from_dict(history_item_data)

            history.append(history_item)

        id = d.pop("id")

        def _parse_job_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        job_id = _parse_job_id(d.pop("job_id"))

        def _parse_last_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        last_error = _parse_last_error(d.pop("last_error"))

        def _parse_last_status_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        last_status_code = _parse_last_status_code(d.pop("last_status_code"))

        def _parse_next_attempt_at(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("next_attempt_at"))

        payload = WebhookDeliveryPayload.from_dict(d.pop("payload"))

        status = check_webhook_delivery_status(d.pop("status"))

        object_ = cast(Literal["webhook_delivery"] | Unset, d.pop("object", UNSET))
        if object_ != "webhook_delivery" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'webhook_delivery', got '{object_}'")

        webhook_delivery = cls(
            attempts=attempts,
            created_at=created_at,
            delivered_at=delivered_at,
            endpoint_id=endpoint_id,
            event_type=event_type,
            history=history,
            id=id,
            job_id=job_id,
            last_error=last_error,
            last_status_code=last_status_code,
            next_attempt_at=next_attempt_at,
            payload=payload,
            status=status,
            object_=object_,
        )

        webhook_delivery.additional_properties = d
        return webhook_delivery

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
