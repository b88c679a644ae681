"""Prices, and what usage costs at them (no FastAPI). The usage records (api.usage) are the one meter: a cost is
always computed from their device-seconds by device kind and inference tokens, never counted on its own.

    cost = (Σ_kind device_seconds_kind / 3600 × price(kind) + inference_tokens / 10⁶ × inference price)
           × (1 − discount)

``price(kind)``: the sheet's key equal to the kind, else the longest key the kind contains (case-insensitive: 'H100'
prices 'NVIDIA H100 80GB HBM3', 'cpu' prices 'cpu (AMD EPYC 9B14)'), else 'default', else the highest price listed
(an unknown device is never free by accident). A project's own sheet (an admin's) overrides the service's
(PRICE_DEVICE_HOUR, PRICE_INFERENCE_PER_MILLION_TOKENS) kind by kind. Where no price is set at all, costs are
device-hours (``unit`` 'device_hour'), and budgets are written in them.

Costs are linear in the counters, so a job's cost is the sum of its attempts' costs, and a month's the sum of its
days'. They are computed at the prices in force when asked: a price change re-prices what is shown from then on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.core.settings import ApiSettings
from api.db.models import Project
from api.usage.schemas import DEVICE_HOURS, Cost, PriceSheet

DIGITS = 9  # a cost's amount is rounded to this many decimals (the sums of attempts' costs then add up exactly)


@dataclass(frozen=True)
class Prices:
    """The prices one project pays: the service's sheet with the project's over it."""

    unit: str  # the currency, or DEVICE_HOURS where nothing is priced
    device_hour: dict[str, float] = field(default_factory=dict)
    inference_per_million_tokens: float = 0.0
    discount: float = 0.0

    @property
    def priced(self) -> bool:
        return self.unit != DEVICE_HOURS

    def per_device_hour(self, kind: str) -> float:
        """The price of one device-hour of ``kind`` (module doc); 1 where nothing is priced (device-hours)."""
        if not self.priced:
            return 1.0
        if kind in self.device_hour:
            return self.device_hour[kind]
        low = kind.lower()
        named = [k for k in self.device_hour if k != "default" and k.lower() in low]
        if named:
            return self.device_hour[max(named, key=len)]
        if "default" in self.device_hour:
            return self.device_hour["default"]
        return max(self.device_hour.values(), default=0.0)

    def cost(self, device_seconds_by_kind: Mapping[str, float], inference_tokens: int = 0) -> Cost:
        """What these counters cost."""
        hours = sum(device_seconds_by_kind.values()) / 3600
        if not self.priced:
            return Cost(amount=round(hours, DIGITS), unit=DEVICE_HOURS, device_hours=round(hours, DIGITS))
        amount = sum(s / 3600 * self.per_device_hour(k) for k, s in device_seconds_by_kind.items())
        amount += inference_tokens / 1e6 * self.inference_per_million_tokens
        amount *= 1 - self.discount
        return Cost(amount=round(amount, DIGITS), unit=self.unit, device_hours=round(hours, DIGITS))

    def device_seconds(self, amount: float, kind: str) -> float:
        """How many device-seconds of ``kind`` ``amount`` buys (inf where they are free)."""
        per_second = self.per_device_hour(kind) / 3600 * (1 - self.discount if self.priced else 1)
        return amount / per_second if per_second > 0 else float("inf")


def prices_of(settings: ApiSettings, project_prices: dict[str, Any] | None) -> Prices:
    """The prices of a project whose own sheet (its ``prices`` column) is ``project_prices``."""
    own = PriceSheet.model_validate(project_prices or {})
    sheet = dict(settings.price_device_hour) | own.device_hour
    inference = (
        own.inference_per_million_tokens
        if own.inference_per_million_tokens is not None
        else settings.price_inference_per_million_tokens
    )
    if not sheet:
        return Prices(DEVICE_HOURS)
    return Prices(settings.price_currency, sheet, inference, own.discount)


class PriceBook:
    """The prices of the projects one answer covers, read once (one query), not once a bucket."""

    def __init__(self, settings: ApiSettings, sheets: Mapping[str, dict[str, Any] | None]) -> None:
        self._settings, self._sheets = settings, dict(sheets)
        self._cache: dict[str, Prices] = {}

    def of(self, project_id: str) -> Prices:
        if project_id not in self._cache:
            self._cache[project_id] = prices_of(self._settings, self._sheets.get(project_id))
        return self._cache[project_id]


def price_book(session: Session, settings: ApiSettings, project_ids: Iterable[str] | None = None) -> PriceBook:
    """The prices of ``project_ids`` (None: every project's, the operator's views)."""
    query = select(Project.id, Project.prices)
    if project_ids is not None:
        query = query.where(Project.id.in_(list(project_ids)))
    return PriceBook(settings, {pid: sheet for pid, sheet in session.execute(query)})


def project_prices(session: Session, settings: ApiSettings, project_id: str) -> Prices:
    """One project's prices."""
    return price_book(session, settings, [project_id]).of(project_id)
