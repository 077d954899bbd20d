"""`envdoctor check --format markdown`: a report to paste into a bug report."""
from __future__ import annotations

import json
from typing import List

from envdoctor.report import Report
from envdoctor.render.report_text import AREA_TITLE, AREAS, _area_summary


def _md(text: str) -> str:
    """Escape text for a Markdown table cell or list item."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def render_report_markdown(report: Report, snapshot_dict: dict) -> str:
    snap = report.snapshot
    lines: List[str] = ["## envdoctor report", "", f"envdoctor {snap.envdoctor_version or ''}, snapshot {snap.created}"
                        + (" (redacted)" if snapshot_dict.get("redacted") else ""), "", "| area | state |", "| --- | --- |"]
    for area in AREAS:
        summary = _area_summary(area, snap)
        if summary is not None:
            lines.append(f"| {AREA_TITLE[area]} | {_md(summary)} |")
    from envdoctor.render.breadth_markdown import maintainer_facts

    lines += maintainer_facts(snap)
    lines += ["", "### Findings", ""]
    if not report.findings:
        lines.append("No findings.")
    for f in report.findings:
        lines.append(f"- **{f.severity.upper()} {f.id}** {_md(f.title)}: {_md(f.message)}")
        for c in f.consequences:
            lines.append(f"  - also caused by this: {_md(c)}")
        for step in f.fix:
            lines.append(f"  - fix: `{step[2:]}`" if step.startswith("$ ") else f"  - fix: {_md(step)}")
    lines += ["", "<details><summary>Snapshot (JSON)</summary>", "", "```json", json.dumps(snapshot_dict, indent=2), "```", "",
              "</details>", ""]
    return "\n".join(lines)
