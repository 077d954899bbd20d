"""Module-level regular expressions compiled on first use, not at import (start-up).

    _LINE = lazy_re(r"^(\\S+)\\s+=>\\s+(.*)$")   # as re.compile(...), compiled by the first _LINE.match(...)

A run of ``check`` imports many parsers whose patterns it never uses (a machine without a GPU never
parses nvidia-smi's table); compiling them all cost ~12 ms at every start.  After the first use the
pattern's methods sit on the object itself, so later calls cost what a compiled pattern's do.
"""
from __future__ import annotations

import re
from typing import Any, cast

__all__ = ["lazy_re"]


class _LazyPattern:
    def __init__(self, pattern: str, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:  # only reached before the first compile, or for a missing name
        compiled = re.compile(*self.__dict__["_source"])
        for attr in ("match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer", "pattern",
                     "flags", "groups", "groupindex"):
            self.__dict__[attr] = getattr(compiled, attr)
        self.__dict__["_compiled"] = compiled
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_re({self._source[0]!r})"


def lazy_re(pattern: str, flags: int = 0) -> "re.Pattern[str]":
    """A stand-in for ``re.compile(pattern, flags)`` that compiles when first used."""
    return cast("re.Pattern[str]", _LazyPattern(pattern, flags))
