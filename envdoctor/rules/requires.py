"""Requires-Dist lines of installed frameworks, parsed once per line.

packaging's requirement and marker parsers cost more to import than most of a
check, and many checks never need them (no framework pins anything): they are
imported on first use.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Optional


@functools.lru_cache(maxsize=4096)
def requirement(line: str) -> Optional[Any]:
    """A packaging Requirement for a Requires-Dist line ("Requires-Dist: " prefix allowed), or None for garbage."""
    from packaging.requirements import InvalidRequirement, Requirement

    text = line.split(":", 1)[1] if line.lower().startswith("requires-dist:") else line
    try:
        return Requirement(text.strip())
    except InvalidRequirement:
        return None


_SEPARATORS = re.compile(r"[-_.]+")


def canonical_name(name: str) -> str:
    """The PEP 503 normalized name (what packaging.utils.canonicalize_name computes, without importing
    packaging.tags and sysconfig behind it)."""
    return _SEPARATORS.sub("-", name).lower()


_EXTRA_RE = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")


def marker_extras(line: str) -> list:
    """The extras a Requires-Dist line's marker names (`extra == "and-cuda"`), normalized."""
    return [x.replace("_", "-").lower() for x in _EXTRA_RE.findall(line)]
