"""Output of ``envdoctor gate``: text for people, json for machines, JUnit XML and GitHub Actions annotations for CI.

Every finding carries the input lines it is about (``Located.locs``, read from the ``file:line`` evidence sources
the planned frameworks and the gate rules cite); a finding about the target machine as a whole has none and is
reported against the input file without a line.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from envdoctor.rules.base import SEVERITY_RANK

SCHEMA = "envdoctor-gate/1"
MARK = {"error": "✗", "warning": "!", "info": "i", "ok": "✓"}
COLOR = {"error": "red", "warning": "yellow", "info": "cyan", "ok": "green"}


@dataclass
class UnitResult:
    plan: Any  # envdoctor.gate.plan.Plan
    located: List[Any]  # [envdoctor.gate.plan.Located]

    @property
    def path(self) -> str:
        return self.plan.unit.path


@dataclass
class GateResult:
    target: str  # one line: what the target machine is
    target_source: str  # "stated facts" | "snapshot FILE" | "this machine"
    units: List[UnitResult]
    rules: List[Any] = field(default_factory=list)  # the rules that ran (JUnit test cases)
    strict: bool = False
    data_collected: str = ""
    data_warnings: List[str] = field(default_factory=list)
    envdoctor_version: str = ""

    def count(self, severity: str) -> int:
        return sum(1 for u in self.units for x in u.located if x.finding.severity == severity)

    def failing(self, severity: str) -> bool:
        return severity == "error" or (self.strict and severity == "warning")

    @property
    def exit_code(self) -> int:
        return 1 if any(self.failing(x.finding.severity) for u in self.units for x in u.located) else 0


def describe_target(snap: Any, source: str) -> str:
    from envdoctor.gate.plan import platform_of

    plat = platform_of(snap) or (f"{snap.platform.system} {snap.platform.machine}".strip() or "platform unknown")
    if snap.platform.wsl:
        plat += f" (WSL{snap.platform.wsl})"
    d = snap.driver
    if d.state == "ok" and d.version:
        driver = f"NVIDIA driver {d.version}" + (f" (CUDA {d.cuda_version})" if d.cuda_version else "")
    elif d.state == "ok" and d.cuda_version:
        driver = f"an NVIDIA driver that runs CUDA {d.cuda_version}"
    elif d.state in ("not_installed", "no_devices") and not snap.gpus:
        driver = "no NVIDIA driver"
    else:
        driver = f"driver {d.state}"
    gpus = ", ".join(g.name + (f" (sm_{g.compute_capability.replace('.', '')})" if g.compute_capability
                               and "sm_" not in g.name else "") for g in snap.gpus) or "no GPU"
    py = f"Python {snap.python.version}" if snap.python.version else "Python not stated"
    return f"{source}: {plat}, {driver}, {gpus}, {py}"


def _sorted(located: List[Any]) -> List[Any]:
    return sorted(located, key=lambda x: (-SEVERITY_RANK.get(x.finding.severity, 0),
                                          (x.locs[0].file, x.locs[0].line) if x.locs else ("~", 0), x.finding.id))


# --------------------------------------------------------------------------- text


def render_text(result: GateResult, verbose: bool = False, color: bool = False) -> str:
    import click

    def st(text: str, sev: str) -> str:
        return click.style(text, fg=COLOR.get(sev)) if color else text

    lines = [f"envdoctor gate -- {result.target}",
             f"(judged with envdoctor's compatibility data, collected {result.data_collected or '?'}; nothing was installed)"]
    for w in result.data_warnings[:3]:
        lines.append(f"data warning: {w}")
    for u in result.units:
        plan = u.plan
        files = f" (+ {', '.join(plan.unit.files[1:])})" if len(plan.unit.files) > 1 else ""
        lines += ["", f"{u.path}{files}"]
        if getattr(plan, "resolver", ""):
            lines.append(f"  resolved by: {plan.resolver}")
        if plan.packages:
            lines.append("  what would be installed:")
            for pkg in plan.packages:
                where = str(pkg.locs[0]) if pkg.locs else u.path
                lines.append(f"    {where}: {pkg.summary or pkg.name}")
        else:
            lines.append("  no torch / tensorflow / jax package to judge")
        if getattr(plan, "not_judged", None):
            lines.append("  not judged:")
            lines += [f"    - {loc}: {why}" for loc, why in plan.not_judged]
        assumed = plan.assumptions + [a for pkg in plan.packages for a in pkg.assumptions]
        if assumed:
            lines.append("  assumed:")
            lines += [f"    - {a}" for a in assumed]
        shown = [x for x in _sorted(u.located) if verbose or x.finding.severity in ("error", "warning")]
        if not shown:
            lines.append("  " + st("✓ no error or warning", "ok"))
        for x in shown:
            f = x.finding
            where = ", ".join(str(loc) for loc in x.locs) or "target machine"
            lines.append("  " + st(f"{MARK.get(f.severity, '?')} {where}: {f.id} {f.message}", f.severity))
            for step in f.fix:
                lines.append(f"      {step}")
            if verbose:
                for ev in f.evidence:
                    lines.append(f"      evidence: {ev.fact}: {ev.value}" + (f"  [{ev.source}]" if ev.source else ""))
                for c in f.consequences:
                    lines.append(f"      also: {c}")
    errors, warnings = result.count("error"), result.count("warning")
    verdict = "the install would not work" if result.exit_code else "nothing stops this install"
    lines += ["", f"Result: {errors} error(s), {warnings} warning(s)"
              + (" (--strict: warnings fail)" if result.strict else "") + f": {verdict} (exit {result.exit_code})."]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- json


def render_json(result: GateResult) -> str:
    from envdoctor.snapshot_io import dump_json

    data: Dict[str, Any] = {
        "schema": SCHEMA,
        "envdoctor_version": result.envdoctor_version,
        "target": {"description": result.target, "source": result.target_source},
        "data": {"collected": result.data_collected, "warnings": list(result.data_warnings)},
        "strict": result.strict,
        "summary": {s: result.count(s) for s in ("error", "warning", "info", "ok")},
        "exit_code": result.exit_code,
        "inputs": [{
            **u.plan.to_dict(),
            "findings": [x.to_dict() for x in _sorted(u.located)],
        } for u in result.units],
    }
    return dump_json(data) + "\n"


# --------------------------------------------------------------------------- JUnit XML


def render_junit(result: GateResult) -> str:
    """A test suite per input, a test case per rule: a failure when that rule found an error in that input (or a
    warning under --strict); other findings of the rule go to the test case's system-out."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="envdoctor gate")
    total = fails = 0
    for u in result.units:
        suite = ET.SubElement(root, "testsuite", name=u.path)
        n = nf = 0
        for r in result.rules:
            mine = [x for x in u.located if x.finding.id == r.id]
            n += 1
            case = ET.SubElement(suite, "testcase", classname=f"envdoctor.gate.{u.path}", name=f"{r.id} {r.name}")
            failing = [x for x in mine if result.failing(x.finding.severity)]
            first = (failing or mine)[0] if mine else None
            if first is not None and first.locs:
                case.set("file", first.locs[0].file)
                case.set("line", str(first.locs[0].line))
            if failing:
                nf += 1
                text = "\n\n".join(_detail(x) for x in failing)
                fail = ET.SubElement(case, "failure", message=_one_line(failing[0]), type=failing[0].finding.severity)
                fail.text = text
            others = [x for x in mine if x not in failing]
            if others:
                out = ET.SubElement(case, "system-out")
                out.text = "\n\n".join(_detail(x) for x in others)
        suite.set("tests", str(n))
        suite.set("failures", str(nf))
        suite.set("errors", "0")
        total += n
        fails += nf
    root.set("tests", str(total))
    root.set("failures", str(fails))
    root.set("errors", "0")
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


def _one_line(x: Any) -> str:
    where = ", ".join(str(loc) for loc in x.locs)
    return (f"{where}: " if where else "") + f"{x.finding.id} {x.finding.message}"


def _detail(x: Any) -> str:
    f = x.finding
    lines = [f"{f.severity}: {_one_line(x)}"]
    lines += [f"  fix: {s}" for s in f.fix]
    lines += [f"  evidence: {e.fact}: {e.value}" + (f" [{e.source}]" if e.source else "") for e in f.evidence]
    lines += [f"  also: {c}" for c in f.consequences]
    return "\n".join(lines)


# --------------------------------------------------------------------------- GitHub Actions annotations


def _esc_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _esc_prop(text: str) -> str:
    return _esc_data(text).replace(":", "%3A").replace(",", "%2C")


def _gh_path(path: str, workspace: Optional[str]) -> str:
    if workspace and os.path.isabs(path):
        try:
            rel = os.path.relpath(path, workspace)
            if not rel.startswith(".."):
                return rel
        except ValueError:
            pass
    return path.replace(os.sep, "/")


def annotation(level: str, message: str, file: Optional[str] = None, line: Optional[int] = None,
               title: Optional[str] = None, workspace: Optional[str] = None) -> str:
    """``::error file=requirements.txt,line=3,title=ED100::message`` (GitHub workflow command)."""
    props = []
    if file:
        props.append(f"file={_esc_prop(_gh_path(file, workspace))}")
    if line:
        props.append(f"line={int(line)}")
    if title:
        props.append(f"title={_esc_prop(title)}")
    return f"::{level}{(' ' + ','.join(props)) if props else ''}::{_esc_data(message)}"


def render_github(result: GateResult, workspace: Optional[str] = None) -> str:
    level = {"error": "error", "warning": "warning", "info": "notice"}
    lines: List[str] = []
    for u in result.units:
        for x in _sorted(u.located):
            f = x.finding
            if f.severity not in level or (f.severity == "info" and not x.locs):
                continue
            text = f.message
            fixes = [s for s in f.fix if s.strip()]
            if fixes:
                text += "\nFix: " + "\n".join(fixes)
            for loc in x.locs or [None]:
                lines.append(annotation(level[f.severity], text, file=loc.file if loc else u.path,
                                        line=loc.line if loc else None, title=f.id, workspace=workspace))
    lines.append(f"envdoctor gate: {result.count('error')} error(s), {result.count('warning')} warning(s)"
                 + (" (--strict)" if result.strict else "") + f"; exit {result.exit_code}")
    return "\n".join(lines) + "\n"


def render(result: GateResult, fmt: str, verbose: bool = False, color: bool = False,
           workspace: Optional[str] = None) -> str:
    if fmt == "json":
        return render_json(result)
    if fmt == "junit":
        return render_junit(result)
    if fmt == "github":
        return render_github(result, workspace)
    return render_text(result, verbose=verbose, color=color)
