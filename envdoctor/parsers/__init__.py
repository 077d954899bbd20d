"""Pure parsers: text of real tool outputs and files in, typed values out.

The contract every public parser here keeps (tests/test_parser_properties.py checks it on
mutated real fixtures):

- it returns a value of its documented type; a field it cannot read is None (or the value is
  partial), garbage as a whole gives None / an empty list;
- or it raises `ParseError` (a ValueError) with the reason, for input it refuses as a whole
  (today: text longer than `MAX_INPUT_CHARS`);
- nothing else: no ValueError/OverflowError/RecursionError from int(), float() or the like.

Only ASCII digits are digits: Python's int(), str.isdigit() and the regex class \\d accept
"²" and Arabic-Indic digits, float() accepts "inf" and "nan". Numbers are read with
`ascii_int` / `ascii_float` (bounded length, ASCII only, finite) and every pattern here is
compiled with re.ASCII.
"""
from __future__ import annotations

import math
import re
from typing import Optional

from envdoctor.lazyre import lazy_re

TYPE_CHECKING = False
if TYPE_CHECKING:  # ast and warnings are imported where a file is parsed: not at every start
    import ast

# The most characters one parser call reads (probes cap captured output well below this).
MAX_INPUT_CHARS = 16 * 1024 * 1024
# The most digits a number may have: more is not a version, index, size or date of any tool here.
MAX_DIGITS = 12
# Regex pieces: one bounded run of ASCII digits, and "no more digits or version parts follow".
NUM = rf"[0-9]{{1,{MAX_DIGITS}}}"
NUM_END = r"(?![0-9]|\.[0-9])"
# A PCI bus id as nvidia-smi and /proc/driver/nvidia print it: 00000000:17:00.0, 0000:17:00.0.
BUS_ID_RE = lazy_re(r"^[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$", re.ASCII)

_INT_RE = lazy_re(r"[0-9]+", re.ASCII)
_DOTTED_RE = lazy_re(rf"{NUM}(?:\.{NUM})*", re.ASCII)
_DOTTED_PREFIX_RE = lazy_re(rf"{NUM}(?:\.{NUM})*(?![0-9])", re.ASCII)
_FLOAT_RE = lazy_re(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)", re.ASCII)


class ParseError(ValueError):
    """A parser refused its input as a whole; str() says why (one line)."""


def ascii_int(text: Optional[str], max_digits: int = MAX_DIGITS) -> Optional[int]:
    """'42' -> 42; None for anything but 1..max_digits ASCII digits (after stripping blanks).

    No sign, no '_', no '²' or '١٢', no 5,000-digit numbers.
    """
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not text or len(text) > max_digits or not _INT_RE.fullmatch(text):
        return None
    return int(text)


def ascii_float(text: Optional[str], max_chars: int = 32) -> Optional[float]:
    """'8.6' -> 8.6, '-1' -> -1.0; None for inf, nan, '1e999', non-ASCII digits or overlong text."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not text or len(text) > max_chars or not _FLOAT_RE.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def dotted_version(text: object, prefix: bool = False) -> Optional[str]:
    """'12.1' -> '12.1' (ASCII digits and dots, each part at most MAX_DIGITS long); else None.

    With prefix=True the leading dotted part of a longer word: '6.0.32830-d62f6a171' -> '6.0.32830'.
    """
    if not isinstance(text, str):
        return None
    text = text.strip()
    m = (_DOTTED_PREFIX_RE.match if prefix else _DOTTED_RE.fullmatch)(text)
    return m.group(0).rstrip(".") if m else None


def python_ast(text: str) -> ast.Module:
    """ast.parse without the SyntaxWarnings ("invalid decimal literal") a damaged file would print.

    Raises what ast.parse raises (SyntaxError, ValueError, RecursionError, MemoryError); callers catch those.
    """
    import ast
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)


def checked_text(text: object) -> Optional[str]:
    """`text` if it is a non-empty str within MAX_INPUT_CHARS; None if not a str or blank.

    Raises ParseError for a longer text.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    if len(text) > MAX_INPUT_CHARS:
        raise ParseError(f"input too large: {len(text)} characters (limit {MAX_INPUT_CHARS})")
    return text


__all__ = ["ParseError", "ascii_int", "ascii_float", "checked_text", "dotted_version", "python_ast", "MAX_DIGITS", "MAX_INPUT_CHARS", "NUM", "NUM_END", "BUS_ID_RE"]
