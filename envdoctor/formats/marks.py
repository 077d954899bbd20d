"""The one place for the marks and colours every findings format uses: a finding's mark is its severity's
(✗ error, ! warning, i info, ✓ ok); an area or input line is ✓ unless something in it is a warning or an error."""
from __future__ import annotations

import os
from typing import Callable, Iterable, Optional

from envdoctor.formats.ansi import ansi
from envdoctor.rules.base import SEVERITY_RANK

MARK = {"error": "✗", "warning": "!", "info": "i", "ok": "✓"}
COLOR = {"error": "red", "warning": "yellow", "info": "cyan", "ok": "green"}


def mark(severity: str) -> str:
    return MARK.get(severity, "?")


def state(severities: Iterable[str]) -> str:
    """The state of a group of findings: its worst severity, where infos alone leave it "ok"."""
    worst = max(severities, key=lambda s: SEVERITY_RANK.get(s, 0), default="ok")
    return worst if SEVERITY_RANK.get(worst, 0) >= SEVERITY_RANK["warning"] else "ok"


def styler(color: bool) -> Callable[[str, str], str]:
    """``style(text, severity)``: the text in the severity's colour when `color`, else as it is."""
    if not color:
        return lambda text, sev: text
    return lambda text, sev: ansi(text, COLOR.get(sev))


def use_color(isatty: bool, output: Optional[str] = None) -> bool:
    """Colour only on a terminal, never into -o FILE, with NO_COLOR set or TERM=dumb."""
    return isatty and not output and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
