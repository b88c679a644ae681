"""Keyset pagination, once: every list endpoint pages by a cursor over a unique sort key, never by offset, and
answers with one ``ListResponse`` shape (OpenAI's ``{"object": "list", "data", "has_more", "first_id", "last_id"}``).

``after`` names the last item of the previous page; its sort key (``cursor``) bounds the next page with a row
comparison, so a page is an index range scan however deep it is, and rows inserted meanwhile never shift it.
One row more than the limit is read to learn ``has_more``.

One round trip a page: the anchor's key is read by a subquery of the page's query, and so is the existence of
the item the list belongs to (``within``: the caller's job, for its events). Only an empty page asks which of
the two is missing, for the 404 — as if each had been looked up first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel
from sqlalchemy import ColumnElement, Select, and_, exists, or_, select
from sqlalchemy.orm import QueryableAttribute, Session

from api.core.errors import NotFound

T = TypeVar("T")
Key = QueryableAttribute[Any]  # a mapped column, e.g. Job.created_at


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    has_more: bool


@dataclass(frozen=True)
class Anchor:
    """An item a page needs: the one it starts after, or the one its rows belong to. The conditions that select
    it (its id, within the caller's scope), and the message and parameter of the 404 when there is none."""

    where: tuple[ColumnElement[bool], ...]
    missing: str
    param: str = "after"


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
    within: Anchor | None = None,
) -> Page[T]:
    """``limit`` rows of ``query`` ordered by ``keys`` (the last one unique), starting after the ``after`` item;
    404 when ``within`` (then ``after``) does not exist."""
    if within is not None:
        query = query.where(exists().where(*within.where))
    if after is not None:
        # an anchor that does not exist makes each subquery NULL, every comparison unknown: an empty page
        cursor = [select(k).where(*after.where).scalar_subquery() for k in keys]
        query = query.where(_beyond(keys, cursor, descending))
    order = [k.desc() if descending else k.asc() for k in keys]
    rows = list(session.scalars(query.order_by(*order).limit(limit + 1)))
    if not rows:
        for needed in (within, after):
            if needed is not None and not session.scalar(select(exists().where(*needed.where))):
                raise NotFound(needed.missing, param=needed.param)
    return Page(rows[:limit], len(rows) > limit)


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
