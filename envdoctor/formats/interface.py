"""The one findings-format interface.

A format is a module (or any object) with ``name``, ``description`` and ``render(doc, options) -> str``. It reads a
FindingsDoc, the report-like object both commands build:

- ``check`` judges one machine: one Section with no name, its findings without locations, the (redacted) snapshot
  for the area lines, and the snapshot dict that JSON and Markdown embed;
- ``gate`` judges install inputs against a target: one Section per input (its path, its install plan), findings
  located at the input lines they are about (none: about the target machine as a whole), and the target described
  in one line.

Formats never import a command; the commands only translate their options into a FindingsDoc and RenderOptions.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Protocol, Tuple

from envdoctor.rules.base import SEVERITY_RANK, Finding, Rule
from envdoctor.records import dataclass, field

if TYPE_CHECKING:
    from envdoctor.report import Report
    from envdoctor.snapshot import Snapshot

SEVERITY_ORDER = ("error", "warning", "info", "ok")


@dataclass
class Item:
    """A finding and the input lines it points at (empty: the machine as a whole). A location is what gate's inputs
    record (envdoctor.gate.inputs.Location): ``.file``, ``.line`` (0: the file as a whole), ``str()`` "file:line"."""

    finding: Finding
    locations: List[Any] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        d = self.finding.to_dict()
        d["locations"] = [{"file": x.file, "line": x.line} for x in self.locations]
        return d


@dataclass
class Section:
    """One judged thing: the machine (name "", check) or one install input (its path, gate) with its plan."""

    name: str
    items: List[Item]
    plan: Any = None  # gate: envdoctor.gate.plan.Plan (unit, packages, assumptions, to_dict())


@dataclass
class FindingsDoc:
    command: str  # "check" | "gate": which command judged (and which JSON schema its report follows)
    sections: List[Section]
    rules: List[Any] = field(default_factory=list)  # the rules that ran (JUnit test cases, SARIF rules, 0-gauges)
    strict: bool = False
    data_collected: str = ""
    data_warnings: List[str] = field(default_factory=list)
    envdoctor_version: str = ""
    target: str = ""  # gate: one line saying what the target machine is
    target_source: str = ""  # gate: "stated facts" | "snapshot FILE" | "this machine"
    snapshot: Optional[Snapshot] = None  # check: the machine judged (redacted); gate: the target
    snapshot_dict: Optional[Dict[str, Any]] = None  # check: the snapshot as JSON and Markdown embed it
    extra: Dict[str, Any] = field(default_factory=dict)  # check --smoke: {"smoke": results}
    artifact: str = ""  # check: the file that states the environment judged (SARIF's physical location)

    @property
    def machine(self) -> Snapshot:
        """The snapshot judged (check's area lines, the snapshot a report embeds); check's redacted one is built from
        `snapshot_dict` the first time a format asks for it."""
        if self.snapshot is None and self.command == "check" and self.snapshot_dict is not None:
            from envdoctor.snapshot import Snapshot

            self.snapshot = Snapshot.from_dict(self.snapshot_dict)
        if self.snapshot is None:
            raise ValueError(f"envdoctor {self.command}: this report carries no snapshot")
        return self.snapshot

    @property
    def items(self) -> List[Item]:
        return [x for s in self.sections for x in s.items]

    def count(self, severity: str) -> int:
        return sum(1 for x in self.items if x.finding.severity == severity)

    def summary(self) -> Dict[str, int]:
        return {s: self.count(s) for s in SEVERITY_ORDER}

    def failing(self, severity: str) -> bool:
        """Whether a finding of `severity` fails the run (an error; with --strict a warning too)."""
        return severity == "error" or (self.strict and severity == "warning")

    @property
    def exit_code(self) -> int:
        return 1 if any(self.failing(x.finding.severity) for x in self.items) else 0

    @property
    def verdict(self) -> str:
        """gate's verdict in words."""
        return "the install would not work" if self.exit_code else "nothing stops this install"

    def catalogue(self) -> List[Any]:
        """The rules that ran, plus the registered rule of any finding whose ID is not among them (a crashed rule's
        ED003), so that every finding has its rule."""
        from envdoctor.rules.base import REGISTRY

        out = list(self.rules)
        have = {r.id for r in out}
        for x in self.items:
            fid = x.finding.id
            if fid not in have and fid in REGISTRY:
                out.append(REGISTRY[fid])
                have.add(fid)
        return out


@dataclass
class RenderOptions:
    verbose: bool = False  # the evidence behind each finding (text), infos too (gate's text)
    color: bool = False  # ANSI colours (text only)
    workspace: Optional[str] = None  # paths under it are shown relative to it ($GITHUB_WORKSPACE)
    timestamp: Optional[float] = None  # when the judgement ran (prometheus)


class Format(Protocol):
    name: str
    description: str

    def render(self, doc: FindingsDoc, options: RenderOptions) -> str: ...


def sorted_items(items: List[Item]) -> List[Item]:
    """Most severe first, then by input line (machine-wide findings last), then by ID."""
    return sorted(items, key=lambda x: (-SEVERITY_RANK.get(x.finding.severity, 0),
                                        (x.locations[0].file, x.locations[0].line) if x.locations else ("~", 0),
                                        x.finding.id))


def where(item: Item, default: str = "") -> str:
    return ", ".join(str(loc) for loc in item.locations) or default


def plan_view(plan: Any, path: str) -> Tuple[List[Tuple[str, str]], List[str]]:
    """gate's plan of one input: [(input line, what would be installed)] and what was assumed."""
    installed = [(str(pkg.locs[0]) if pkg.locs else path, pkg.summary or pkg.name) for pkg in plan.packages]
    return installed, plan.assumptions + [a for pkg in plan.packages for a in pkg.assumptions]


def relative_path(path: str, workspace: Optional[str]) -> str:
    """`path` relative to `workspace` when it lies under it, in '/' form."""
    if workspace and os.path.isabs(path):
        try:
            rel = os.path.relpath(path, workspace)
            if not rel.startswith(".."):
                return rel.replace(os.sep, "/")
        except ValueError:
            pass
    return path.replace(os.sep, "/")


def from_report(report: Report, rules: List[Rule], snapshot_dict: Dict[str, Any], strict: bool = False) -> FindingsDoc:
    """check's envdoctor.report.Report as a FindingsDoc: the machine as one section."""
    from envdoctor import __version__

    return FindingsDoc(command="check", sections=[Section("", [Item(f) for f in report.findings])], rules=list(rules),
                       strict=strict, data_collected=report.data_collected, data_warnings=list(report.data_warnings),
                       envdoctor_version=__version__, snapshot=report.snapshot, snapshot_dict=snapshot_dict,
                       extra=dict(report.extra))
