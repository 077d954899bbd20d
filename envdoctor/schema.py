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
    if dataclasses.is_dataclass(tp):
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


if __name__ == "__main__":
    print(json.dumps(snapshot_json_schema(), indent=2))
