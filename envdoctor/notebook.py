"""check's report in a notebook cell (Jupyter, VS Code): the doctor's summary as an HTML table, one row per area
with its mark and state (envdoctor.formats.areas.area_lines, the rows the text format draws), the findings under
their area with their fixes, then the verdict. The snapshot and findings it reads are the redacted ones; the
caller sends the whole through the redactor once more, as every output goes (envdoctor.api.Report._repr_html_).
"""
from __future__ import annotations

from html import escape
from typing import List

from envdoctor.formats.areas import AREA_TITLE, area_lines, verdict
from envdoctor.formats.interface import FindingsDoc
from envdoctor.formats.marks import mark
from envdoctor.rules.base import Finding

# the marks' colours (envdoctor.formats.marks.COLOR), readable on a light and on a dark notebook theme
_COLOUR = {"error": "#d1242f", "warning": "#b58105", "info": "#0969da", "ok": "#1a7f37"}


def _mark_cell(severity: str, sign: str = "") -> str:
    colour = _COLOUR.get(severity, "inherit")
    return f'<td style="color:{colour};font-weight:bold;text-align:center">{escape(sign or mark(severity))}</td>'


def _finding_row(f: Finding) -> str:
    steps = "".join(f"<li>fix: <code>{escape(s[2:])}</code></li>" if s.startswith("$ ") else f"<li>fix: {escape(s)}</li>"
                    for s in f.fix)
    also = "".join(f"<li>also caused by this: {escape(c)}</li>" for c in f.consequences)
    more = f'<ul style="margin:0.2em 0 0 1em">{also}{steps}</ul>' if steps or also else ""
    return (f'<tr class="envdoctor-finding" data-id="{escape(f.id)}" data-severity="{escape(f.severity)}">'
            f"{_mark_cell(f.severity)}<td><code>{escape(f.id)}</code></td>"
            f'<td style="text-align:left">{escape(f.message)}{more}</td></tr>')


def report_html(doc: FindingsDoc) -> str:
    """check's findings document (envdoctor.doctor.findings_document) as one HTML fragment."""
    rows: List[str] = []
    for line in area_lines(doc):
        rows.append(f'<tr class="envdoctor-area" data-area="{escape(line.area)}" data-state="{escape(line.state)}">'
                    f"{_mark_cell(line.state, line.sign)}<th style=\"text-align:left\">{escape(line.title)}</th>"
                    f'<td style="text-align:left">{escape(line.summary or "")}</td></tr>')
        rows += [_finding_row(f) for f in line.findings]
        rows += [f'<tr class="envdoctor-see" data-id="{escape(f.id)}">{_mark_cell(f.severity)}<td></td>'
                 f'<td style="text-align:left">see <code>{escape(f.id)}</code> under '
                 f"{escape(AREA_TITLE.get(f.area, f.area))}</td></tr>" for f in line.others]
    end = verdict(doc)
    notes = [f"not known: {w}" for w in end.unknown] + [f"data warning: {w}" for w in doc.data_warnings]
    if doc.data_collected:
        notes.append(f"compatibility data collected {doc.data_collected}")
    foot = "".join(f"<li>{escape(n)}</li>" for n in notes)
    return ('<div class="envdoctor-report">'
            f'<table><caption style="text-align:left;color:{_COLOUR.get(end.severity, "inherit")}" '
            f'data-severity="{escape(end.severity)}">envdoctor: {escape(end.text)}</caption>'
            "<thead><tr><th></th><th>area / finding</th><th>state</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
            + (f'<ul class="envdoctor-notes">{foot}</ul>' if foot else "") + "</div>")
