"""envdoctor is typed: the package ships py.typed, pyproject's [tool.mypy] is what .ci/run checks, and
an ignore in a checked module says what it ignores and why. (`python -m mypy` itself runs in .ci/run.)"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Dict, List

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "envdoctor"
IGNORE = re.compile(r"#\s*type:\s*ignore\b(?P<rest>.*)$")
WITH_REASON = re.compile(r"^\[[\w-]+(?:\s*,\s*[\w-]+)*\]\s+#\s*\S")


def mypy_config() -> Dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def pattern_matches(pattern: str, module: str) -> bool:
    """mypy's override patterns: `a.*` is a and everything under it, `a.*.b` any b below a."""
    rx = r"(?:\.\w+)*".join(re.escape(part) for part in pattern.split(".*"))
    return re.fullmatch(rx, module) is not None


def unchecked_patterns() -> List[str]:
    out: List[str] = []
    for ov in mypy_config().get("overrides", []):
        if ov.get("ignore_errors"):
            mods = ov["module"]
            out += [mods] if isinstance(mods, str) else mods
    return out


def module_of(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def test_pattern_matches_like_mypy():
    assert pattern_matches("envdoctor.rules.*", "envdoctor.rules")
    assert pattern_matches("envdoctor.rules.*", "envdoctor.rules.cudnn_pins")
    assert pattern_matches("envdoctor.*.cli", "envdoctor.gate.cli")
    assert pattern_matches("envdoctor.*.cli", "envdoctor.cli")
    assert not pattern_matches("envdoctor.*.cli", "envdoctor.gate.cli_options")
    assert not pattern_matches("envdoctor.snapshot", "envdoctor.snapshot_io")
    assert pattern_matches("pynvml", "pynvml") and not pattern_matches("pynvml", "pynvml.smi")


def test_the_package_is_marked_typed_and_the_config_checks_it():
    assert (PACKAGE / "py.typed").is_file()
    cfg = mypy_config()
    assert cfg["files"] == ["envdoctor"]
    # the package's own modules are never excused from import errors wholesale: only named third parties are
    for ov in cfg.get("overrides", []):
        if ov.get("ignore_missing_imports"):
            mods = [ov["module"]] if isinstance(ov["module"], str) else ov["module"]
            assert not [m for m in mods if m.split(".")[0] == "envdoctor"], mods
    assert not cfg.get("ignore_missing_imports"), "a global switch hides every missing import: name the modules"
    # the modules excused while other branches rewrite them never include the whole package
    for pattern in unchecked_patterns():
        assert not pattern_matches(pattern, "envdoctor") and not pattern_matches(pattern, "envdoctor.errors"), pattern


def test_type_ignores_in_checked_modules_name_a_code_and_a_reason():
    unchecked = unchecked_patterns()
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if any(pattern_matches(p, module_of(path)) for p in unchecked):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = IGNORE.search(line)
            if m and not WITH_REASON.match(m.group("rest").strip()):
                bad.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not bad, "a `# type: ignore` needs [the-code] and a `# reason` after it:\n" + "\n".join(bad)
