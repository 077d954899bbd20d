"""What ``envdoctor gate`` found (GateResult) and how it reaches the shared findings formats (envdoctor.formats):
``GateResult.to_doc()`` gives them a section per input with its plan and its located findings.

Every finding carries the input lines it is about (``Located.locs``, read from the ``file:line`` evidence sources
the planned frameworks and the gate rules cite); a finding about the target machine as a whole has none and is
reported against the input file without a line.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional

from envdoctor.formats.interface import FindingsDoc, Item, Section

__all__ = ["GateResult", "UnitResult", "describe_target", "render"]


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
    snapshot: Optional[Any] = None  # the target judged

    def to_doc(self) -> FindingsDoc:
        sections = [Section(u.path, [Item(x.finding, list(x.locs)) for x in u.located], plan=u.plan) for u in self.units]
        return FindingsDoc(command="gate", sections=sections, rules=list(self.rules), strict=self.strict,
                           data_collected=self.data_collected, data_warnings=list(self.data_warnings),
                           envdoctor_version=self.envdoctor_version, target=self.target,
                           target_source=self.target_source, snapshot=self.snapshot)

    def count(self, severity: str) -> int:
        return self.to_doc().count(severity)

    @property
    def exit_code(self) -> int:
        return self.to_doc().exit_code


def describe_target(snap: Any, source: str) -> str:
    from envdoctor.facts.platform import platform_of

    plat = platform_of(snap) or (f"{snap.platform.system} {snap.platform.machine}".strip() or "platform unknown")
    if snap.platform.wsl:
        plat += f" (WSL{snap.platform.wsl})"
    if getattr(snap.platform, "glibc", ""):
        plat += f", glibc {snap.platform.glibc}"
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


def render(result: GateResult, fmt: str, verbose: bool = False, color: bool = False,
           workspace: Optional[str] = None) -> str:
    from envdoctor.formats.registry import render as render_doc

    return render_doc(fmt, result.to_doc(), verbose=verbose, color=color, workspace=workspace)
