"""Markdown to paste into a bug report or a pull request.

check: a table of the machine, the findings with their fixes, and the redacted snapshot in a collapsed block (instead
of `python -m torch.utils.collect_env`). gate: the target, then per input what would be installed, what was assumed
and each finding at its input line.
"""
from __future__ import annotations

from typing import List

from envdoctor.formats.areas import AREA_TITLE, area_summary
from envdoctor.formats.interface import FindingsDoc, Item, RenderOptions, plan_view, sorted_items, where
from envdoctor.formats.safe_text import printable
from envdoctor.rules.base import AREAS

name = "markdown"
description = "for bug reports and pull requests: the findings with their fixes (check: and the snapshot)"


def _md(text: str) -> str:
    """Escape text for a Markdown table cell or list item."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def render(doc: FindingsDoc, options: RenderOptions) -> str:
    # read on a terminal as often as pasted: a snapshot's control characters are shown, never sent (no colours here)
    return printable(_gate_md(doc) if doc.command == "gate" else _machine_md(doc))


def _finding_lines(x: Item) -> List[str]:
    f = x.finding
    at = f" `{where(x)}`" if x.locations else ""
    # the message says what the title says and more (the title is `envdoctor explain ID`'s): one sentence, once
    lines = [f"- **{f.severity.upper()} {f.id}**{at} {_md(f.message)}"]
    for c in f.consequences:
        lines.append(f"  - also caused by this: {_md(c)}")
    for step in f.fix:
        lines.append(f"  - fix: `{step[2:]}`" if step.startswith("$ ") else f"  - fix: {_md(step)}")
    return lines


def _machine_md(doc: FindingsDoc) -> str:
    import json

    snap, sdict = doc.machine, doc.snapshot_dict or {}
    lines: List[str] = ["## envdoctor report", "", f"envdoctor {snap.envdoctor_version or ''}, snapshot {snap.created}"
                        + (" (redacted)" if sdict.get("redacted") else ""), "", "| area | state |", "| --- | --- |"]
    for area in AREAS:
        summary = area_summary(area, snap)
        if summary is not None:
            lines.append(f"| {AREA_TITLE[area]} | {_md(summary)} |")
    from envdoctor.formats.breadth_markdown import maintainer_facts

    lines += maintainer_facts(snap)
    lines += ["", "### Findings", ""]
    if not doc.items:
        lines.append("No findings.")
    for x in doc.items:
        lines += _finding_lines(x)
    lines += ["", "<details><summary>Snapshot (JSON)</summary>", "", "```json", json.dumps(sdict, indent=2), "```", "",
              "</details>", ""]
    return "\n".join(lines)


def _gate_md(doc: FindingsDoc) -> str:
    lines: List[str] = ["## envdoctor gate report", "", f"Target: {_md(doc.target)}", "",
                        f"Judged with envdoctor's compatibility data, collected {doc.data_collected or '?'}; "
                        "nothing was installed."]
    for w in doc.data_warnings[:3]:
        lines += ["", f"data warning: {_md(w)}"]
    for section in doc.sections:
        lines += ["", f"### `{section.name}`", ""]
        if section.plan is not None:
            installed, assumed = plan_view(section.plan, section.name)
            if getattr(section.plan, "resolver", ""):
                lines.append(f"- resolved by: {_md(section.plan.resolver)}")
            lines += [f"- would install: `{loc}` {_md(what)}" for loc, what in installed] or \
                ["- no torch / tensorflow / jax package to judge"]
            lines += [f"- not judged: `{loc}` {_md(why)}" for loc, why in getattr(section.plan, "not_judged", None) or []]
            lines += [f"- assumed: {_md(a)}" for a in assumed]
            lines.append("")
        items = sorted_items(section.items)
        if not items:
            lines.append("No findings.")
        for x in items:
            lines += _finding_lines(x)
    lines += ["", f"**Result:** {doc.count('error')} error(s), {doc.count('warning')} warning(s)"
              + (" (--strict: warnings fail)" if doc.strict else "") + f": {doc.verdict} (exit {doc.exit_code}).", ""]
    return "\n".join(lines)
