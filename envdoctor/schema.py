"""JSON Schema of the snapshot, derived from the dataclass model.

docs/snapshot.schema.json is this function's output (tests keep them in sync):
`python -m envdoctor.schema > docs/snapshot.schema.json`.
"""
from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any, Dict

from envdoctor.snapshot import SCHEMA_VERSION, Snapshot


def _schema_for(tp: Any, defs: Dict[str, Any]) -> Dict[str, Any]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union:
        inner = [a for a in args if a is not type(None)]
        return {"anyOf": [_schema_for(inner[0], defs), {"type": "null"}]}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):  # a dataclass type (a hint is never an instance)
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder against recursion
            hints = typing.get_type_hints(tp)
            props = {f.name: _schema_for(hints[f.name], defs) for f in dataclasses.fields(tp)}
            doc = (tp.__doc__ or "").strip()
            defs[name] = {
                "type": "object",
                "description": doc.split("\n\n")[0] if doc and not doc.startswith(name + "(") else name,
                "properties": props,
                "required": [f.name for f in dataclasses.fields(tp)],
                "additionalProperties": False,
            }
        return {"$ref": f"#/$defs/{name}"}
    if origin in (list, typing.List):
        return {"type": "array", "items": _schema_for(args[0], defs)}
    if origin in (dict, typing.Dict):
        return {"type": "object", "additionalProperties": _schema_for(args[1], defs)}
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    return {}


def snapshot_json_schema() -> Dict[str, Any]:
    defs: Dict[str, Any] = {}
    top = _schema_for(Snapshot, defs)
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://envdoctor.invalid/schema/snapshot-" + SCHEMA_VERSION + ".json",
        "title": "envdoctor machine snapshot",
        "description": f"schema_version {SCHEMA_VERSION}; see docs/snapshot.md",
        "$ref": top["$ref"],
        "$defs": defs,
    }
    return schema


def report_json_schema() -> Dict[str, Any]:
    """The schema of `envdoctor check --format json` (docs/report.schema.json)."""
    from envdoctor.report import REPORT_SCHEMA_VERSION
    from envdoctor.rules.base import AREAS, SEVERITIES

    snap = snapshot_json_schema()
    finding = {
        "type": "object",
        "required": ["id", "severity", "title", "message", "area", "subject", "evidence", "fix", "consequences"],
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "pattern": "^ED[0-9]{3}$"},
            "severity": {"enum": list(SEVERITIES)},
            "title": {"type": "string"},
            "message": {"type": "string"},
            "area": {"enum": list(AREAS)},
            "subject": {"type": "string"},
            "evidence": {"type": "array", "items": {
                "type": "object", "required": ["fact", "value", "source"], "additionalProperties": False,
                "properties": {"fact": {"type": "string"}, "value": {"type": "string"}, "source": {"type": "string"}}}},
            "fix": {"type": "array", "items": {"type": "string"}},
            "consequences": {"type": "array", "items": {"type": "string"}},
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://envdoctor.invalid/schema/report-" + REPORT_SCHEMA_VERSION + ".json",
        "title": "envdoctor check report",
        "description": f"schema_version {REPORT_SCHEMA_VERSION}; see docs/report.md",
        "type": "object",
        "required": ["schema_version", "envdoctor_version", "data", "summary", "findings", "snapshot"],
        "properties": {
            "schema_version": {"type": "string"},
            "envdoctor_version": {"type": "string"},
            "data": {"type": "object", "required": ["collected", "warnings"], "properties": {
                "collected": {"type": "string"}, "warnings": {"type": "array", "items": {"type": "string"}}}},
            "summary": {"type": "object", "required": list(SEVERITIES),
                        "properties": {s: {"type": "integer", "minimum": 0} for s in SEVERITIES}},
            "findings": {"type": "array", "items": {"$ref": "#/$defs/Finding"}},
            "snapshot": {"$ref": "#/$defs/Snapshot"},
        },
        "$defs": {**snap["$defs"], "Finding": finding},
    }


if __name__ == "__main__":
    import sys

    which = sys.argv[1] if len(sys.argv) > 1 else "snapshot"
    print(json.dumps(report_json_schema() if which == "report" else snapshot_json_schema(), indent=2))
