"""Cell values rendered the way a person reads them (shared by the xlsx and csv readers)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

_CURRENCY_SYMBOLS = ("$", "€", "£", "¥")


def _number(value: float, number_format: str) -> str:
    fmt = number_format or "General"
    if "%" in fmt:
        return f"{value * 100:.{_decimals(fmt.split('%')[0])}f}%"
    symbol = next((s for s in _CURRENCY_SYMBOLS if s in fmt), None)
    if symbol is not None:
        sign = "-" if value < 0 else ""
        return f"{sign}{symbol}{abs(value):,.2f}"
    if float(value).is_integer():
        grouped = "," in fmt
        return f"{int(value):,}" if grouped else str(int(value))
    return f"{Decimal(repr(value)).normalize():f}"


def _decimals(fmt: str) -> int:
    return len(fmt.split(".")[1].rstrip("#")) if "." in fmt else 0


def render_value(value: object, number_format: str = "General") -> str:
    """A cell value as text: dates as ``12 March 2025``, currency as ``$1,250.00``, ``Yes``/``No``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, dt.datetime):
        day = f"{value.day} {value:%B %Y}"
        return day if value.time() == dt.time(0, 0) else f"{day} {value:%H:%M}"
    if isinstance(value, dt.date):
        return f"{value.day} {value:%B %Y}"
    if isinstance(value, dt.time):
        return f"{value:%H:%M}"
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, int | float):
        return _number(float(value), number_format)
    return str(value).strip()
