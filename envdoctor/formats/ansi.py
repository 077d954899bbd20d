"""Terminal colours as ANSI escapes, without click (formats and smoke's report are not command-line modules;
envdoctor.formats.marks says which colour each severity has). Imports nothing: `smoke` uses it too."""
from __future__ import annotations

from typing import Optional

CODES = {"red": 31, "green": 32, "yellow": 33, "cyan": 36}
RESET = "\x1b[0m"


def ansi(text: str, fg: Optional[str]) -> str:
    """`text` in the terminal colour `fg` (None: the text, then a reset), byte for byte as click.style writes it."""
    return (f"\x1b[{CODES[fg]}m" if fg else "") + text + RESET
