"""Keyset pagination, once: every list endpoint pages by a cursor over a unique sort key, never by offset.

``after`` names the last item of the previous page; its sort key (``cursor``) bounds the next page with a row
comparison, so a page is an index range scan however deep it is, and rows inserted meanwhile never shift it.
One row more than the limit is read to learn ``has_more``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import ColumnElement, Select, and_, or_, select
from sqlalchemy.orm import Session

from api.errors import NotFound

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    has_more: bool


def cursor(
    session: Session, keys: Sequence[ColumnElement[Any]], *where: ColumnElement[bool], missing: str
) -> tuple[Any, ...]:
    """The sort key of the item ``after`` names (``where`` selects it within the caller's scope); 404 when there
    is none there, with ``missing`` as the message (param ``after``)."""
    row = session.execute(select(*keys).where(*where)).first()
    if row is None:
        raise NotFound(missing, param="after")
    return tuple(row)


def _beyond(keys: Sequence[ColumnElement[Any]], values: Sequence[Any], descending: bool) -> ColumnElement[bool]:
    """(k1, k2, …) < (v1, v2, …) — or > — spelled with AND/OR, which every database plans as a range."""
    first, value = keys[0], values[0]
    strictly = first < value if descending else first > value
    if len(keys) == 1:
        return strictly
    return or_(strictly, and_(first == value, _beyond(keys[1:], values[1:], descending)))


def keyset_page(
    session: Session,
    query: Select[tuple[T]],
    keys: Sequence[ColumnElement[Any]],
    *,
    limit: int,
    after: Sequence[Any] | None,
    descending: bool,
) -> Page[T]:
    """``limit`` rows of ``query`` ordered by ``keys`` (the last one unique), starting after the ``after`` key."""
    if after is not None:
        query = query.where(_beyond(keys, after, descending))
    order = [k.desc() if descending else k.asc() for k in keys]
    rows = list(session.scalars(query.order_by(*order).limit(limit + 1)))
    return Page(rows[:limit], len(rows) > limit)
