"""Rules, findings, and the context a rule reads.

A rule is a small function registered with @rule(...): it reads a Context
(the snapshot, the matrices, a few derived facts) and returns findings. Each
rule has a stable ID, a name, a default severity, a rationale, an example and
references, shown by `envdoctor rules` and `envdoctor explain ID`.

Findings that share a `cause` key describe one root cause seen in several
places; the engine reports the first as the cause and folds the others into
its `consequences`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional

if TYPE_CHECKING:
    from envdoctor.context import Context

from envdoctor.records import dataclass, field

SEVERITIES = ("error", "warning", "info", "ok")
SEVERITY_RANK = {"error": 3, "warning": 2, "info": 1, "ok": 0}
AREAS = ("platform", "driver", "gpu", "toolkit", "cudnn", "torch", "tensorflow", "jax", "python", "environment", "data")


@dataclass
class EvidenceItem:
    """One fact a finding rests on: `fact` names it, `value` is what was seen, `source` where it came from
    (a probe evidence source such as "file:/proc/driver/nvidia/version", or a matrix row's source)."""

    fact: str
    value: str
    source: str = ""


@dataclass
class Finding:
    id: str
    severity: str
    title: str
    message: str
    area: str = "environment"
    evidence: List[EvidenceItem] = field(default_factory=list)
    fix: List[str] = field(default_factory=list)  # concrete steps; commands are prefixed with "$ "
    cause: Optional[str] = None  # findings with the same cause key are folded into one
    consequences: List[str] = field(default_factory=list)
    subject: str = ""  # what it is about: "torch 2.1.0+cu121", "GPU 0", ...

    def to_dict(self) -> Dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity,
            "title": self.title,
            "message": self.message,
            "area": self.area,
            "subject": self.subject,
            "evidence": [{"fact": e.fact, "value": e.value, "source": e.source} for e in self.evidence],
            "fix": list(self.fix),
            "consequences": list(self.consequences),
        }


@dataclass
class Rule:
    id: str
    name: str
    title: str
    severity: str
    area: str
    rationale: str
    example: str
    references: List[str]
    check: Callable[["Context"], List[Finding]]
    module: str = ""  # the module that registered it: its family (envdoctor.rules.engine.FAMILY_MODULES)

    def finding(self, message: str, *, severity: Optional[str] = None, evidence: Optional[Iterable[EvidenceItem]] = None,
                fix: Optional[Iterable[str]] = None,
                cause: Optional[str] = None, subject: str = "", title: Optional[str] = None,
                area: Optional[str] = None) -> Finding:
        return Finding(
            id=self.id,
            severity=severity or self.severity,
            title=title or self.title,
            message=message,
            area=area or self.area,
            evidence=list(evidence or []),
            fix=list(fix or []),
            cause=cause,
            subject=subject,
        )


REGISTRY: Dict[str, Rule] = {}


def _no_findings(ctx: "Context") -> List[Finding]:
    return []

# What @rule registers: `fn(ctx, rule) -> list[Finding]`
RuleFunction = Callable[["Context", Rule], List[Finding]]


def rule(*, id: str, name: str, title: str, severity: str, area: str, rationale: str, example: str,
         references: List[str]) -> Callable[[RuleFunction], RuleFunction]:
    """Register a rule function `fn(ctx, rule) -> list[Finding]`."""
    if severity not in SEVERITIES:
        raise ValueError(f"{id}: bad severity {severity}")
    if area not in AREAS:
        raise ValueError(f"{id}: bad area {area}")

    def deco(fn: RuleFunction) -> RuleFunction:
        if id in REGISTRY:
            raise ValueError(f"duplicate rule id {id}")
        r = Rule(id, name, title, severity, area, rationale.strip(), example.strip(), list(references), _no_findings)

        def check(ctx: "Context", _fn: RuleFunction = fn, _r: Rule = r) -> List[Finding]:
            return list(_fn(ctx, _r) or [])

        r.check = check
        r.module = getattr(fn, "__module__", "") or ""
        REGISTRY[id] = r
        return fn

    return deco
