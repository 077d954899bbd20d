"""The click types for every numeric option: :class:`Seconds` (every ``--timeout``) and :class:`Count`
(``fleet manifest --nodes``).

``click.FloatRange`` accepts ``nan`` (no comparison is true for it), so ``--timeout nan`` used to pass:
probes failed and a hanging child was never killed; ``click.IntRange`` takes Unicode digits (``int("١٢")``
is 12) and has no maximum unless given one. These accept a plain number written in ASCII digits that is
finite and within the option's range; anything else is a usage error: one line, exit 2.
"""
from __future__ import annotations

import math
import re
from typing import Any, Optional

import click

_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)


class Number(click.ParamType):
    """A finite number from `minimum` to `maximum` (both included); an integer with ``integer=True``."""

    name = "number"
    metavar = "NUMBER"
    unit = ""
    integer = False

    def __init__(self, minimum: float, maximum: float) -> None:
        if not (math.isfinite(minimum) and math.isfinite(maximum) and minimum <= maximum):
            raise ValueError("a Number needs finite bounds, minimum <= maximum")
        self.minimum = minimum
        self.maximum = maximum

    def get_metavar(self, param: click.Parameter, ctx: Optional[click.Context] = None) -> Optional[str]:
        return self.metavar

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Any:
        what = f"a {'whole ' if self.integer else ''}number" + (f" of {self.unit}" if self.unit else "")
        if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
            number: float = value  # a default, or a caller passing a number
        else:
            text = str(value).strip()
            if not (_INTEGER if self.integer else _DECIMAL).fullmatch(text):
                self.fail(f"{str(value)!r} is not {what}", param, ctx)
            number = int(text) if self.integer else float(text)
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.integer and number != int(number):
            self.fail(f"{value!r} is not {what}", param, ctx)
        if not self.minimum <= number <= self.maximum:
            self.fail(f"{value!r} is out of range: give {self.minimum:g} to {self.maximum:g}"
                      + (f" {self.unit}" if self.unit else ""), param, ctx)
        return int(number) if self.integer else float(number)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.minimum:g}, {self.maximum:g})"


class Seconds(Number):
    """A duration in seconds (> 0)."""

    name = "seconds"
    metavar = "SECONDS"
    unit = "seconds"

    def __init__(self, minimum: float, maximum: float) -> None:
        if not minimum > 0:
            raise ValueError("Seconds needs a minimum > 0")
        super().__init__(minimum, maximum)


class Count(Number):
    """How many of something: a whole number."""

    name = "count"
    metavar = "N"
    integer = True
