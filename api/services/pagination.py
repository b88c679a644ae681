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
from sqlalchemy.orm import QueryableAttribute, Session

from api.errors import NotFound

T = TypeVar("T")
Key = QueryableAttribute[Any]  # a mapped column, e.g. Job.created_at


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    has_more: bool


@dataclass(frozen=True)
class Anchor:
    """The item a page starts after: the conditions that select it (its id, within the caller's scope) and the
    message of the 404 when there is none."""

    where: tuple[ColumnElement[bool], ...]
    missing: str


def anchor(after: str | None, *where: ColumnElement[bool], missing: str) -> Anchor | None:
    """The ``Anchor`` of a request's ``after`` (None on the first page)."""
    return Anchor(where, missing) if after else None


def _beyond(keys: Sequence[Key], values: Sequence[Any], descending: bool) -> ColumnElement[bool]:
    """(k1, k2, …) < (v1, v2, …) — or > — spelled with AND/OR, which every database plans as a range."""
    first, value = keys[0], values[0]
    strictly: ColumnElement[bool] = first < value if descending else first > value
    if len(keys) == 1:
        return strictly
    return or_(strictly, and_(first == value, _beyond(keys[1:], values[1:], descending)))


def keyset_page(
    session: Session,
    query: Select[T],
    keys: Sequence[Key],
    *,
    limit: int,
    descending: bool,
    after: Anchor | None = None,
) -> Page[T]:
    """``limit`` rows of ``query`` ordered by ``keys`` (the last one unique), starting after the ``after`` item."""
    if after is not None:
        row = session.execute(select(*keys).where(*after.where)).first()
        if row is None:
            raise NotFound(after.missing, param="after")
        query = query.where(_beyond(keys, tuple(row), descending))
    order = [k.desc() if descending else k.asc() for k in keys]
    rows = list(session.scalars(query.order_by(*order).limit(limit + 1)))
    return Page(rows[:limit], len(rows) > limit)
