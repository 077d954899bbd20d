"""SARIF 2.1.0, the format code-scanning tools read (GitHub code scanning's upload-sarif among them).

One run: ``tool.driver.rules`` are the rules that ran, from the rule catalogue (ID, name, title as the short
description, rationale as the full one, rationale + example + references as the help, the default severity as the
default level); each finding is a result with its ruleId/ruleIndex, level (error, warning, note; ok: none) and
message (with the fix steps). A gate finding's locations are the requirements-file lines it is about (the input
file without a region when it is about the target as a whole); a machine finding of check has a logical location
(the machine's area it is about) and, because GitHub code scanning refuses a result without a file, a physical one:
the file that states the environment (``FindingsDoc.artifact``: the --snapshot FILE, else the project's
envdoctor.toml / pyproject.toml / requirements file ..., else envdoctor.toml; envdoctor.doctor.environment_file).
The invocation records the exit code.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional
from urllib.parse import quote

from envdoctor.formats.interface import FindingsDoc, Item, RenderOptions, relative_path, sorted_items

name = "sarif"
description = "SARIF 2.1.0 for code-scanning tools: the rule catalogue and a result per finding"

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note", "ok": "none"}
SRCROOT = "%SRCROOT%"


def render(doc: FindingsDoc, options: RenderOptions) -> str:
    from envdoctor.snapshot_io import dump_json

    rules = doc.catalogue()
    index = {r.id: i for i, r in enumerate(rules)}
    results = [_result(doc, section.name, x, index, options.workspace)
               for section in doc.sections for x in sorted_items(section.items)]
    run: Dict[str, Any] = {
        "tool": {"driver": {"name": "envdoctor", "version": doc.envdoctor_version,
                            "rules": [_descriptor(r) for r in rules]}},
        "invocations": [{"executionSuccessful": True, "exitCode": doc.exit_code,
                         "properties": {"command": doc.command, "strict": doc.strict}}],
        "results": results,
        "properties": {"dataCollected": doc.data_collected, "dataWarnings": list(doc.data_warnings),
                       **({"target": doc.target} if doc.target else {})},
    }
    if options.workspace:
        run["originalUriBaseIds"] = {SRCROOT: {"uri": _dir_uri(options.workspace)}}
    return dump_json({"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}) + "\n"


def _descriptor(r: Any) -> Dict[str, Any]:
    rationale = " ".join(str(r.rationale).split())
    help_text = rationale + (f"\n\nExample: {r.example}" if r.example else "")
    if r.references:
        help_text += "\n\nReferences:\n" + "\n".join(f"- {ref}" for ref in r.references)
    d: Dict[str, Any] = {
        "id": r.id, "name": r.name, "shortDescription": {"text": r.title}, "fullDescription": {"text": rationale},
        "help": {"text": help_text}, "defaultConfiguration": {"level": LEVEL.get(r.severity, "warning")},
        "properties": {"area": r.area, "tags": [r.area]},
    }
    uri = next((ref for ref in r.references if str(ref).startswith(("https://", "http://"))), None)
    if uri:
        d["helpUri"] = uri.split()[0]
    return d


def _result(doc: FindingsDoc, section: str, x: Item, index: Dict[str, int], workspace: Optional[str]) -> Dict[str, Any]:
    f = x.finding
    text = f.message
    fixes = [s for s in f.fix if s.strip()]
    if fixes:
        text += "\nFix: " + "\n".join(fixes)
    res: Dict[str, Any] = {"ruleId": f.id, "level": LEVEL.get(f.severity, "warning"), "message": {"text": text}}
    if f.id in index:
        res["ruleIndex"] = index[f.id]
    if f.severity == "ok":
        res["kind"] = "pass"
    if x.locations:
        res["locations"] = [_physical(loc.file, loc.line, workspace) for loc in x.locations]
    elif section:  # gate: about the target as a whole, reported against the input file
        res["locations"] = [_physical(section, 0, workspace)]
    else:  # check: the machine's area, at the file that states the environment
        qualified = "machine/" + f.area + (f"/{f.subject}" if f.subject else "")
        loc = _physical(doc.artifact or "envdoctor.toml", 0, workspace)
        loc["logicalLocations"] = [{"name": f.area, "kind": "resource", "fullyQualifiedName": qualified}]
        res["locations"] = [loc]
    res["properties"] = {"severity": f.severity, "title": f.title, "area": f.area, "subject": f.subject,
                         "fix": list(f.fix), "consequences": list(f.consequences),
                         "evidence": [{"fact": e.fact, "value": e.value, "source": e.source} for e in f.evidence]}
    return res


def _physical(file: str, line: int, workspace: Optional[str]) -> Dict[str, Any]:
    path = relative_path(file, workspace)
    if os.path.isabs(path):
        artifact: Dict[str, Any] = {"uri": _file_uri(path)}
    else:
        artifact = {"uri": quote(path), "uriBaseId": SRCROOT}
    physical: Dict[str, Any] = {"artifactLocation": artifact}
    if line:
        physical["region"] = {"startLine": int(line)}
    return {"physicalLocation": physical}


def _file_uri(path: str) -> str:
    from pathlib import Path

    return Path(path).as_uri()


def _dir_uri(path: str) -> str:
    uri = _file_uri(os.path.abspath(path))
    return uri if uri.endswith("/") else uri + "/"
