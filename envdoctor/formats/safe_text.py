"""Text that is safe to put on a terminal: values read from a snapshot, a command's output or the user.

A GPU name, a path or a label may hold control characters; printed raw, an ESC starts a terminal escape
sequence (retitle the window, clear the screen, rewrite what was printed before) and a CR or a newline forges
lines. Every renderer of plain text passes such values through :func:`printable`.
"""
from __future__ import annotations

from typing import Dict

# C0 controls but \t and \n, DEL, and the C1 controls (U+0080..U+009F: a terminal may read U+009B as CSI).
# A translation table, not a regular expression: nothing to compile at the start of every check.
_CODES = [c for c in range(0x20) if chr(c) not in "\t\n"] + list(range(0x7F, 0xA0))
_TABLE: Dict[int, str] = {c: "\\x%02x" % c for c in _CODES}
_CHARS = frozenset(chr(c) for c in _CODES)


def printable(s: str) -> str:
    """`s` with every control character but newline and tab as a visible escape (ESC: the 4 characters \\x1b)."""
    if _CHARS.isdisjoint(s):
        return s
    return s.translate(_TABLE)


def has_control(s: str) -> bool:
    """Whether `s` holds a character :func:`printable` would escape, or a newline or tab."""
    return not _CHARS.isdisjoint(s) or "\n" in s or "\t" in s
