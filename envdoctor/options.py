"""The one click type for every numeric option (today: every command's ``--timeout``).

``click.FloatRange`` accepts ``nan`` (no comparison is true for it), so ``--timeout nan`` used to pass:
probes failed and a hanging child was never killed. :class:`Seconds` accepts a plain decimal number
(ASCII digits only, optionally with an exponent) that is finite and within the option's range; anything
else is a usage error: one line, exit 2.
"""
from __future__ import annotations

import math
import re
from typing import Any, Optional

import click

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


class Seconds(click.ParamType):
    """A duration in seconds: finite, at least `minimum` (> 0) and at most `maximum`."""

    name = "seconds"

    def __init__(self, minimum: float, maximum: float) -> None:
        if not (0 < minimum <= maximum and math.isfinite(maximum)):
            raise ValueError("Seconds needs 0 < minimum <= maximum < inf")
        self.minimum = minimum
        self.maximum = maximum

    def get_metavar(self, param: click.Parameter, ctx: Optional[click.Context] = None) -> Optional[str]:
        return "SECONDS"

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> float:
        if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
            number = float(value)  # a default, or a caller passing a number
        else:
            text = str(value).strip()
            if not _NUMBER.fullmatch(text):
                self.fail(f"{str(value)!r} is not a number of seconds", param, ctx)
            number = float(text)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number of seconds", param, ctx)
        if not self.minimum <= number <= self.maximum:
            self.fail(f"{value!r} is out of range: give {self.minimum:g} to {self.maximum:g} seconds", param, ctx)
        return number

    def __repr__(self) -> str:
        return f"Seconds({self.minimum:g}, {self.maximum:g})"
