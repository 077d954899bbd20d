"""JSON for machines: one object on stdout and nothing else.

check: the report of docs/report.md (schema docs/report.schema.json, `schema_version` 1.0) with the snapshot judged;
gate: ``envdoctor-gate/1`` (docs/gate.md), each input with its plan and its located findings.
"""
from __future__ import annotations

from typing import Any, Dict

from envdoctor.formats.interface import FindingsDoc, RenderOptions, sorted_items

name = "json"
description = "for machines: check's report (docs/report.schema.json) or gate's envdoctor-gate/1"

GATE_SCHEMA = "envdoctor-gate/1"


def render(doc: FindingsDoc, options: RenderOptions) -> str:
    from envdoctor.snapshot_io import dump_json

    return dump_json(gate_dict(doc) if doc.command == "gate" else report_dict(doc)) + "\n"


def report_dict(doc: FindingsDoc) -> Dict[str, Any]:
    from envdoctor.report import REPORT_SCHEMA_VERSION

    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "envdoctor_version": doc.envdoctor_version,
        "data": {"collected": doc.data_collected, "warnings": list(doc.data_warnings)},
        "summary": doc.summary(),
        "findings": [x.finding.to_dict() for x in doc.items],
        "snapshot": doc.snapshot_dict if doc.snapshot_dict is not None else doc.machine.to_dict(),
        **doc.extra,
    }


def gate_dict(doc: FindingsDoc) -> Dict[str, Any]:
    return {
        "schema": GATE_SCHEMA,
        "envdoctor_version": doc.envdoctor_version,
        "target": {"description": doc.target, "source": doc.target_source},
        "data": {"collected": doc.data_collected, "warnings": list(doc.data_warnings)},
        "strict": doc.strict,
        "summary": doc.summary(),
        "exit_code": doc.exit_code,
        "inputs": [{**s.plan.to_dict(), "findings": [x.to_dict() for x in sorted_items(s.items)]} for s in doc.sections],
    }
