"""The rule catalogue as `envdoctor rules` and `envdoctor explain ID` show it: every registered rule with its
family, its general fix (envdoctor/rules/fixes.toml, keyed by ID) and the source file that registers it."""
from __future__ import annotations

import functools
import os
import sys
from typing import Any, Dict, List, Optional

FIXES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixes.toml")


@functools.lru_cache(maxsize=1)
def fixes() -> Dict[str, str]:
    """Rule ID -> what fixes its finding, in general (through the matrices' parse cache: `rules` and `explain`
    then neither import nor run the TOML parser)."""
    from envdoctor.knowledge.load import parse_toml_cached

    with open(FIXES_FILE, encoding="utf-8") as fh:
        data = parse_toml_cached(fh.read())
    return {rid: str(row.get("fix", "")).strip() for rid, row in data.items() if isinstance(row, dict)}


def fix_of(r: Any) -> str:
    return fixes().get(r.id, "")


def source_of(r: Any) -> str:
    """Where the rule is registered: ``envdoctor/rules/cuda_driver.py:123`` (the line of its ``id="ED100"``), the
    path relative to the folder that holds the envdoctor package."""
    mod = sys.modules.get(r.module or "")
    path: Optional[str] = getattr(mod, "__file__", None)
    if not path:
        return r.module or "?"
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(sys.modules["envdoctor"].__file__ or "")))
    rel = os.path.relpath(os.path.abspath(path), pkg_parent).replace(os.sep, "/")
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return rel
    # the @rule(id="ED100", ...) line; else (rules registered from a table, as the smoke rules) the ID's first quote
    for needles in ((f'id="{r.id}"', f"id='{r.id}'"), (f'"{r.id}"', f"'{r.id}'")):
        for n, line in enumerate(lines, 1):
            if any(x in line for x in needles):
                return f"{rel}:{n}"
    return rel


def rule_dict(r: Any) -> Dict[str, Any]:
    from envdoctor.rules.engine import family_of

    return {"id": r.id, "name": r.name, "title": r.title, "severity": r.severity, "area": r.area,
            "family": family_of(r), "rationale": " ".join(r.rationale.split()), "example": r.example,
            "references": list(r.references), "fix": fix_of(r), "module": r.module, "source": source_of(r)}


def explain_text(r: Any, width: int = 88) -> str:
    import textwrap

    from envdoctor.rules.engine import FAMILY_WORDS, family_of

    lines: List[str] = [f"{r.id} ({r.name}): {r.title}",
                        f"default severity: {r.severity}; area: {r.area}; {FAMILY_WORDS[family_of(r)]}", "",
                        textwrap.fill(" ".join(r.rationale.split()), width), "", "Example: " + r.example]
    fix = fix_of(r)
    if fix:
        lines += ["", textwrap.fill("Fix: " + fix, width, subsequent_indent="  ")]
    if r.references:
        lines += ["", "References:"] + [f"  {ref}" for ref in r.references]
    lines += ["", f"Source: {source_of(r)} ({r.module})"]
    return "\n".join(lines) + "\n"
