"""TOML reading shared by pyproject.toml, pylock.toml and uv.lock: problems with a line, and the line of a key or
a string literal (tomllib gives none)."""
from __future__ import annotations

import re
import sys
from typing import Any, List, Optional

from envdoctor.gate.inputs.interface import InputProblem, Location

# --------------------------------------------------------------------------- TOML helpers (line numbers)


def _toml_loads(text: str, display: str, problems: List[InputProblem]) -> Optional[dict]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python < 3.11
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except RecursionError:
        problems.append(InputProblem(Location(display), "invalid TOML: arrays or tables nested too deeply"))
        return None
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        mm = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        line = int(mm.group(1)) if mm else int(getattr(exc, "lineno", 0) or 0)
        if not line and "end of document" in msg:
            line = max(len(text.splitlines()), 1)
        short = re.sub(r"\s*\(at line \d+, column \d+\)$", "", msg)
        problems.append(InputProblem(Location(display, line), f"invalid TOML: {short}"))
        return None


class _LineFinder:
    """Finds the line of a string literal (each occurrence used once) or a key, after a header line."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.used: set = set()

    def header(self, pattern: str, start: int = 0) -> int:
        rx = re.compile(pattern)
        for i in range(start, len(self.lines)):
            if rx.match(self.lines[i]):
                return i + 1
        return 0

    def literal(self, value: str, after: int = 0) -> int:
        needles = [json_quote(value), "'" + value + "'"]
        for i in range(max(after - 1, 0), len(self.lines)):
            for nd in needles:
                col = self.lines[i].find(nd)
                while col >= 0:
                    if (i, col) not in self.used:
                        self.used.add((i, col))
                        return i + 1
                    col = self.lines[i].find(nd, col + 1)
        return after

    def key(self, key: str, after: int) -> int:
        rx = re.compile(r"^\s*(\"|')?" + re.escape(key) + r"(\"|')?\s*=")
        for i in range(max(after - 1, 0), len(self.lines)):
            if rx.match(self.lines[i]):
                return i + 1
        return after


def json_quote(value: str) -> str:
    import json

    return json.dumps(value)


def _str_list(value: Any) -> Optional[List[str]]:
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return list(value)
    return None
