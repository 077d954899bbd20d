"""The command line is a thin layer over the doctor: only the CLI modules import click or each other,
the core works without click, and the commands that need no machine (`--help`, `rules`, `explain`) load none of
the packages the other commands need.

The import walk reads envdoctor/'s sources with ast (nothing is imported): every import statement, at module level
or inside a function, and every ``importlib.import_module("...")`` with a literal name.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List, Tuple

import click
import pytest

from tests.snapfactory import machine, torch

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "envdoctor"
# the command line: every command's cli.py, the group, check / rules / explain, the entry point (envdoctor.entry, whose
# fast door reaches click and envdoctor.cli only inside functions), the shared options
CLI_MODULES = {"envdoctor.cli", "envdoctor.commands", "envdoctor.__main__", "envdoctor.entry", "envdoctor.cli_options"}
HEAVY = ("probes", "gate", "lock", "fleet", "smoke", "onboard", "mcpserver")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_cli(module: str) -> bool:
    return module in CLI_MODULES or module.endswith(".cli")


def imported_names(source: str, module: str, is_package: bool = False) -> Iterator[Tuple[int, str]]:
    """(line, absolute module name) of everything `source` imports; ``from X import y`` yields X and X.y (y may
    be a module)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            yield node.lineno, node.args[0].value


def violations(source: str, module: str, is_package: bool = False) -> List[str]:
    """What a non-CLI module must not import: a CLI module, or click."""
    out = []
    for line, name in imported_names(source, module, is_package):
        if name == "click" or name.startswith("click."):
            out.append(f"{module}:{line} imports {name}")
        elif name.startswith("envdoctor") and is_cli(name):
            out.append(f"{module}:{line} imports the CLI module {name}")
    return out


def sources() -> List[Tuple[str, Path]]:
    return [(module_name(p), p) for p in sorted(PACKAGE.rglob("*.py"))]


def test_the_walk_sees_every_kind_of_import():
    """The checker itself: each way of reaching the CLI or click is caught, in a function too."""
    text = ("import click\n"
            "def f():\n    from envdoctor.cli import main\n"
            "def g():\n    from ..gate import cli\n"
            "def h():\n    from .cli import lock\n"
            "def i():\n    import importlib; importlib.import_module('envdoctor.fleet.cli')\n"
            "from click.shell_completion import CompletionItem\n"
            "import envdoctor.commands\n")
    found = violations(text, "envdoctor.lock.core")
    assert sorted({int(v.split(" ", 1)[0].rpartition(":")[2]) for v in found}) == [1, 3, 5, 7, 9, 10, 11], found
    assert violations("from envdoctor.doctor import build_report\nfrom envdoctor.gate.core import run_gate\n",
                      "envdoctor.fleet.gate") == []


def test_only_the_cli_modules_import_the_cli_or_click():
    mods = sources()
    assert {"envdoctor.doctor", "envdoctor.emit", "envdoctor.gate.core", "envdoctor.lock.core"} <= {m for m, _ in mods}
    bad = [v for m, p in mods if not is_cli(m) for v in violations(p.read_text(), m, p.name == "__init__.py")]
    assert not bad, "\n".join(bad)


def test_the_entry_reaches_click_only_inside_functions():
    """envdoctor.entry is every start's first module: at module level it imports neither click nor a module that
    does (the fast door, envdoctor.cli_spec and envdoctor.commands_run, is click-free by the rule above)."""
    tree = ast.parse((PACKAGE / "entry.py").read_text())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = [a.name for n in top if isinstance(n, ast.Import) for a in n.names] + \
            [n.module or "" for n in top if isinstance(n, ast.ImportFrom)]
    assert names and not [n for n in names if n.startswith(("click", "envdoctor", "typing"))], names
    # `python -m envdoctor`: before the entry, only the built-in _signal (its first handler goes in before any
    # import a signal could interrupt); then envdoctor.entry and nothing else
    main_tree = ast.parse((PACKAGE / "__main__.py").read_text())
    imported = [(a.name if isinstance(n, ast.Import) else f"{n.module}.{a.name}")
                for n in ast.walk(main_tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names]
    assert imported == ["_signal", "envdoctor.entry.main"], imported


def test_every_command_module_is_a_cli_module():
    """What the group registers is a CLI module, so the rule above covers every command."""
    from envdoctor.cli import COMMANDS

    assert all(is_cli(module) for module, _attr in COMMANDS.values()), COMMANDS


def test_the_core_runs_without_click(tmp_path):
    """With click unimportable, the doctor judges a saved snapshot and gate's core judges an install on it."""
    snap = tmp_path / "snap.json"
    snap.write_text(machine(driver="470.57.02", driver_cuda="11.4", gpus=["Tesla V100-SXM2-16GB:7.0"],
                            frameworks=[torch("2.1.2+cu121", cuda="12.1", cudnn="8.9.2")]).to_json())
    req = tmp_path / "requirements.txt"
    req.write_text("torch==2.1.2\n")
    code = ("import sys; sys.modules['click'] = None\n"
            "from envdoctor import doctor\n"
            "from envdoctor.gate.core import run_gate\n"
            f"snap = doctor.obtain_snapshot(None, None, {str(snap)!r}, 5.0)\n"
            "report = doctor.build_report(snap)\n"
            "doc = doctor.findings_document(report, snap, doctor.prepare_judgement()[0], strict=False, redact=True)\n"
            "gate = run_gate([" + repr(str(req)) + "], snapshot_file=" + repr(str(snap)) + ", offline=True)\n"
            "print(sorted({f.id for f in report.findings if f.severity == 'error'}), doc.exit_code, gate.exit_code)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), timeout=300)
    assert proc.returncode == 0, proc.stderr
    errors, check_rc, gate_rc = proc.stdout.rsplit(" ", 2)
    assert "ED100" in errors and check_rc == "1" and gate_rc.strip() == "1", proc.stdout


# --------------------------------------------------------------------------- lazy sub-commands


def _loaded_by(argv: List[str]) -> Tuple[str, List[str]]:
    """(stdout, the heavy envdoctor packages loaded) of `envdoctor ARGV` run in a fresh interpreter."""
    code = ("import sys\n"
            "from envdoctor.entry import main\n"
            "try:\n"
            f"    main({argv!r})\n"
            "except SystemExit as exc:\n"
            "    assert exc.code in (0, None), exc.code\n"
            f"heavy = sorted({{m for m in sys.modules if m.split('.')[:2][-1] in {HEAVY!r} and m.startswith('envdoctor.')}})\n"
            "sys.stdout.write('\\n--loaded--' + ' '.join(heavy) + '\\n')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), timeout=300)
    assert proc.returncode == 0, proc.stderr
    out, _, loaded = proc.stdout.rpartition("\n--loaded--")
    return out, loaded.split()


@pytest.mark.parametrize("argv", [["--help"], ["rules"], ["explain", "ED100"], ["explain", "ED701"]],
                         ids=lambda a: " ".join(a))
def test_commands_without_a_machine_load_no_command_package(argv):
    out, loaded = _loaded_by(argv)
    assert loaded == [], loaded
    if argv == ["--help"]:
        from envdoctor.cli import COMMANDS

        for name in list(COMMANDS) + ["probe"]:
            assert f"\n  {name} " in out, name
    elif argv == ["rules"]:
        ids = {ln.split()[0] for ln in out.splitlines() if ln.strip()}
        assert {"ED100", "ED701", "ED805"} <= ids  # machine, smoke and gate rules
    else:
        assert out.startswith(argv[1]) and "\nFix: " in out and "\nSource: envdoctor/rules/" in out


def test_help_lists_each_command_as_the_command_itself_would():
    """`envdoctor --help` writes each command's short help from envdoctor.cli.SUMMARIES without importing it: the
    same text the command's own help gives, at any terminal width."""
    import importlib

    from envdoctor.cli import COMMANDS, SUMMARIES

    assert set(SUMMARIES) == set(COMMANDS)
    for name, (module, attr) in COMMANDS.items():
        real = getattr(importlib.import_module(module), attr)
        for width in (30, 45, 60, 80, 120, 400):
            assert click.Command(name, help=SUMMARIES[name]).get_short_help_str(width) == \
                real.get_short_help_str(width), (name, width)


# --------------------------------------------------------------------------- explain


def _cli(argv: List[str], capsys) -> Tuple[int, str, str]:
    from envdoctor.entry import main

    with pytest.raises(SystemExit) as done:
        main(argv)
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return done.value.code or 0, out, err


@pytest.mark.parametrize("rule_id, path", [("ED701", "envdoctor/rules/smoke_rules.py"),
                                           ("ED805", "envdoctor/rules/gate_rules.py"),
                                           ("ED100", "envdoctor/rules/cuda_driver.py")])
def test_explain_shows_the_fix_and_the_file_that_registers_the_rule(rule_id, path, capsys):
    from envdoctor.rules.catalogue import fixes

    rc, out, _ = _cli(["explain", rule_id.lower()], capsys)
    assert rc == 0 and out.startswith(rule_id + " (")
    fix_line = next(ln for ln in out.splitlines() if ln.startswith("Fix: "))
    assert fix_line[5:] and fixes()[rule_id].startswith(fix_line[5:].split()[0])
    source = next(ln for ln in out.splitlines() if ln.startswith("Source: ")).split()[1]
    file, _, line = source.partition(":")
    assert file == path
    assert f'id="{rule_id}"' in (ROOT / file).read_text().splitlines()[int(line) - 1]

    rc, out, _ = _cli(["explain", rule_id, "--format", "json"], capsys)
    data = json.loads(out)
    assert rc == 0 and data["id"] == rule_id and data["fix"] == fixes()[rule_id] and data["source"] == source


def test_explain_of_an_unknown_rule_is_one_line_and_exit_2(capsys):
    rc, out, err = _cli(["explain", "ED999"], capsys)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and "envdoctor rules" in err


def test_smoke_rules_are_registered_with_rule_in_the_rules_package():
    """The smoke family is registered by a rule module (`@rule`), so listing it imports no smoke code, and every
    smoke rule has a fix (the fixes.toml test covers every registered rule)."""
    from envdoctor.rules.catalogue import fixes
    from envdoctor.rules.engine import all_rules, family_of

    smoke = [r for r in all_rules() if family_of(r) == "smoke"]
    assert {r.id for r in smoke} >= {"ED700", "ED701", "ED710", "ED713"}
    assert {r.module for r in smoke} == {"envdoctor.rules.smoke_rules"}
    assert all(fixes().get(r.id) for r in smoke)
