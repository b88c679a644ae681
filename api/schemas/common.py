from __future__ import annotations

from typing import Generic, Literal, TypeVar

from pydantic import BaseModel

T = TypeVar("T")


class ListResponse(BaseModel, Generic[T]):
    """A page of a list: ``after=<last id>`` fetches the next one while ``has_more`` is true."""

    object: Literal["list"] = "list"
    data: list[T]
    has_more: bool
    first_id: str | None = None
    last_id: str | None = None

    @classmethod
    def page(cls, items: list[T], has_more: bool) -> ListResponse[T]:
        ids = [getattr(i, "id", None) for i in items]
        return cls(data=items, has_more=has_more, first_id=ids[0] if ids else None, last_id=ids[-1] if ids else None)
