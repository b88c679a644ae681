"""The tables' common ground: ``Base`` (its metadata's naming convention for constraints, ``columns()``), and the
two values every table's rows are made with: ``now()`` (Unix seconds, OpenAI's convention) and ``new_id`` (a
prefixed id: ``file-…``, ``ftjob-…``)."""

from __future__ import annotations

import functools
import secrets
import time
from typing import Any

from sqlalchemy import JSON, MetaData, inspect
from sqlalchemy.orm import DeclarativeBase

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def now() -> int:
    return int(time.time())


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(12)}"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}

    def columns(self) -> dict[str, Any]:
        """The row's column values by attribute name: what its response schema is validated from (each schema's
        ``from_row`` adds only the fields that are not a column of the same name)."""
        return {key: getattr(self, key) for key in _column_keys(type(self))}


@functools.cache
def _column_keys(cls: type[Base]) -> tuple[str, ...]:
    """A mapped class's column attribute names, looked up once (an event page converts 20 rows)."""
    return tuple(attr.key for attr in inspect(cls).column_attrs)
