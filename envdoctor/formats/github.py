"""GitHub Actions workflow commands: ``::error file=requirements.txt,line=3,title=ED100::message``.

An error or a warning becomes an annotation at each input line it is about (gate), at the input file when it is
about the target as a whole, or without a file (check: the machine); an info becomes a notice only where it points
at an input line. Paths under $GITHUB_WORKSPACE are made relative to it, as the annotations need. The last line
sums up.
"""
from __future__ import annotations

from typing import List, Optional

from envdoctor.formats.interface import FindingsDoc, RenderOptions, relative_path, sorted_items

name = "github"
description = "GitHub Actions annotations (workflow commands) at the input lines"

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _esc_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _esc_prop(text: str) -> str:
    return _esc_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, file: Optional[str] = None, line: Optional[int] = None,
               title: Optional[str] = None, workspace: Optional[str] = None) -> str:
    """One workflow command (GitHub's escaping of data and properties)."""
    props = []
    if file:
        props.append(f"file={_esc_prop(relative_path(file, workspace))}")
    if line:
        props.append(f"line={int(line)}")
    if title:
        props.append(f"title={_esc_prop(title)}")
    return f"::{level}{(' ' + ','.join(props)) if props else ''}::{_esc_data(message)}"


def render(doc: FindingsDoc, options: RenderOptions) -> str:
    lines: List[str] = []
    for section in doc.sections:
        for x in sorted_items(section.items):
            f = x.finding
            if f.severity not in LEVEL or (f.severity == "info" and not x.locations):
                continue
            text = f.message
            fixes = [s for s in f.fix if s.strip()]
            if fixes:
                text += "\nFix: " + "\n".join(fixes)
            for loc in x.locations or [None]:
                lines.append(annotation(LEVEL[f.severity], text, file=loc.file if loc else (section.name or None),
                                        line=loc.line if loc else None, title=f.id, workspace=options.workspace))
    lines.append(f"envdoctor {doc.command}: {doc.count('error')} error(s), {doc.count('warning')} warning(s)"
                 + (" (--strict)" if doc.strict else "") + f"; exit {doc.exit_code}")
    return "\n".join(lines) + "\n"
