"""Text for people.

check, in the manner of `flutter doctor`: a line per area with [✓] / [!] / [✗], and the findings, what else the same
cause explains and the fixes under it. gate: per input what would be installed and what was assumed, then each
finding at the input line it is about. Marks and colours come from envdoctor.formats.marks.
"""
from __future__ import annotations

from typing import Callable, List

from envdoctor.formats.areas import AREA_TITLE, area_lines, verdict
from envdoctor.formats.interface import FindingsDoc, Item, RenderOptions, plan_view, sorted_items, where
from envdoctor.formats.marks import mark, styler
from envdoctor.formats.safe_text import printable
from envdoctor.rules.base import Finding

name = "text"
description = "for people: check's area lines (flutter doctor style), gate's plan per input; colour on a terminal"

Style = Callable[[str, str], str]


def render(doc: FindingsDoc, options: RenderOptions) -> str:
    # Values come from a snapshot or a command's output: a GPU name may hold a terminal escape. Every line goes
    # through printable, a coloured one before its colour codes are added (they are the only escapes written).
    coloured = styler(options.color)

    def style(text: str, sev: str) -> str:
        return coloured(printable(text), sev)

    if doc.command == "gate":
        return _gate_text(doc, options.verbose, style)
    return _machine_text(doc, options.verbose, style)


# --------------------------------------------------------------------------- check: the machine by area


def _machine_text(doc: FindingsDoc, verbose: bool, style: Style) -> str:
    lines: List[str] = ["Doctor summary" + ("" if verbose else " (run with -v for the evidence):")]
    for row in area_lines(doc):
        lines.append(style(f"[{row.sign}] {row.title}" + (f": {row.summary}" if row.summary else ""), row.state))
        for f in row.findings:
            lines.extend(_finding_lines(f, verbose, style))
        for f in row.others:
            lines.append(style(f"    {mark(f.severity)} see {f.id} under {AREA_TITLE.get(f.area, f.area)}", f.severity))
    end = verdict(doc)
    lines.append("")
    lines.append(style(f"{mark(end.severity) if end.severity != 'ok' else '•'} {end.text}", end.severity))
    for what in end.unknown:
        lines.append(style(f"  not known: {what}", "warning"))
    if doc.data_collected:
        lines.append(printable(f"  (compatibility data collected {doc.data_collected})"))
    for w in doc.data_warnings:
        lines.append(style(f"  data warning: {w}", "warning"))
    return "\n".join(lines) + "\n"


def _finding_lines(f: Finding, verbose: bool, style: Style) -> List[str]:
    out = [style(f"    {mark(f.severity)} {f.id} {f.message}", f.severity)]
    for c in f.consequences:
        out.append(printable(f"        also caused by this: {c}"))
    for step in f.fix:
        out.append(printable(f"        fix: {step}"))
    if verbose:
        for e in f.evidence:
            out.append(printable(f"        evidence: {e.fact} = {e.value}" + (f"  [{e.source}]" if e.source else "")))
    return out


# --------------------------------------------------------------------------- gate: each input's plan and findings


def _gate_text(doc: FindingsDoc, verbose: bool, style: Style) -> str:
    lines = [printable(f"envdoctor gate -- {doc.target}"),
             printable(f"(judged with envdoctor's compatibility data, collected {doc.data_collected or '?'}; "
                       f"nothing was installed)")]
    for w in doc.data_warnings[:3]:
        lines.append(printable(f"data warning: {w}"))
    for section in doc.sections:
        plan = section.plan
        files = f" (+ {', '.join(plan.unit.files[1:])})" if plan is not None and len(plan.unit.files) > 1 else ""
        lines += ["", printable(f"{section.name}{files}")]
        lines += [printable(line) for line in plan_lines(plan, section.name)]
        shown = [x for x in sorted_items(section.items) if verbose or x.finding.severity in ("error", "warning")]
        if not shown:
            lines.append("  " + style(f"{mark('ok')} no error or warning", "ok"))
        for x in shown:
            lines += _located_lines(x, verbose, style)
    errors, warnings = doc.count("error"), doc.count("warning")
    lines += ["", f"Result: {errors} error(s), {warnings} warning(s)"
              + (" (--strict: warnings fail)" if doc.strict else "") + f": {doc.verdict} (exit {doc.exit_code})."]
    return "\n".join(lines) + "\n"


def plan_lines(plan, path: str) -> List[str]:
    """What an input would install and what was assumed."""
    if plan is None:
        return []
    installed, assumed = plan_view(plan, path)
    lines = [f"  resolved by: {plan.resolver}"] if getattr(plan, "resolver", "") else []
    lines += ["  what would be installed:"] + [f"    {loc}: {what}" for loc, what in installed] if installed else \
        ["  no torch / tensorflow / jax package to judge"]
    not_judged = getattr(plan, "not_judged", None) or []
    if not_judged:
        lines += ["  not judged:"] + [f"    - {loc}: {why}" for loc, why in not_judged]
    if assumed:
        lines += ["  assumed:"] + [f"    - {a}" for a in assumed]
    return lines


def _located_lines(x: Item, verbose: bool, style: Style) -> List[str]:
    f = x.finding
    lines = ["  " + style(f"{mark(f.severity)} {where(x, 'target machine')}: {f.id} {f.message}", f.severity)]
    for step in f.fix:
        lines.append(printable(f"      {step}"))
    if verbose:
        for ev in f.evidence:
            lines.append(printable(f"      evidence: {ev.fact}: {ev.value}" + (f"  [{ev.source}]" if ev.source else "")))
        for c in f.consequences:
            lines.append(printable(f"      also: {c}"))
    return lines
