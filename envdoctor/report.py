"""The doctor's report: a snapshot, the findings, and what the data was."""
from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.rules.base import Finding
from envdoctor.snapshot import Snapshot
from envdoctor.records import dataclass, field

REPORT_SCHEMA_VERSION = "1.0"  # check's JSON report (envdoctor.formats.json, docs/report.md)


@dataclass
class Report:
    snapshot: Snapshot
    findings: List[Finding]
    data_collected: str = ""
    data_warnings: List[str] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def exit_code(self, strict: bool = False) -> int:
        if self.count("error"):
            return 1
        if strict and self.count("warning"):
            return 1
        return 0
