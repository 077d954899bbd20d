"""The import graph of envdoctor/, read with ast (nothing is imported):

- a rule module (a module under envdoctor/rules/ that registers a rule with @rule) never imports another rule
  module, at module level or inside a function: shared facts live in envdoctor/facts/; the rules' infrastructure
  (base, context, engine, catalogue, summary) may be imported;
- the module-level import graph (imports under `if TYPE_CHECKING:` do not run, so they do not count) has no cycle;
- function-level imports are listed (-rA shows them) but never fail.

The walker is tested on a planted package first, so a graph it cannot read fails loudly instead of passing.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

ROOT = Path(__file__).resolve().parents[1]

INFRASTRUCTURE = {"base", "context", "engine", "catalogue", "summary"}

# Rule -> rule imports allowed, each naming exactly what it takes: none (the framework choosers live in
# facts/choices.py, the pin clashes in facts/clashes.py). An entry here needs a reason next to it.
ALLOWED: Dict[Tuple[str, str], Set[str]] = {}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    names: Tuple[str, ...]
    line: int
    level: str  # "module" | "function" | "typing"


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve(mod: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".") if is_package else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join(base + ([node.module] if node.module else []))


def edges_of(root: Path, path: Path, modules: Set[str]) -> List[Edge]:
    """Every import of one file onto a module of `modules`, with the level it runs at."""
    mod = module_name(root, path)
    is_package = path.name == "__init__.py"
    out: List[Edge] = []

    def add(target: str, names: Tuple[str, ...], line: int, level: str) -> None:
        if target in modules and target != mod:
            out.append(Edge(mod, target, names, line, level))

    def visit(node: ast.AST, level: str) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                add(name, (), node.lineno, level)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(mod, is_package, node)
            plain = []
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:  # `from pkg import submodule`
                    add(sub, (), node.lineno, level)
                else:
                    plain.append(alias.name)
            if plain:
                add(base, tuple(plain), node.lineno, level)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            level = "function"
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, "typing" if level == "module" else level)
            for child in node.orelse:
                visit(child, level)
            return
        for inner in ast.iter_child_nodes(node):
            visit(inner, level)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), "module")
    return out


def is_rule_module(path: Path) -> bool:
    """Does the file register a rule (a function decorated with @rule(...))?"""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                fn = deco.func if isinstance(deco, ast.Call) else deco
                if getattr(fn, "id", None) == "rule" or getattr(fn, "attr", None) == "rule":
                    return True
    return False


def graph(root: Path, package: str) -> Tuple[Dict[str, Path], List[Edge]]:
    files = {module_name(root, p): p for p in sorted((root / package).rglob("*.py"))}
    modules = set(files)
    edges = [e for p in files.values() for e in edges_of(root, p, modules)]
    return files, edges


def rule_to_rule(root: Path, package: str, files: Dict[str, Path], edges: List[Edge]) -> List[Edge]:
    rules_pkg = f"{package}.rules."
    rule_modules = {m for m, p in files.items() if m.startswith(rules_pkg) and is_rule_module(p)}
    infra = {rules_pkg + n for n in INFRASTRUCTURE}
    return [e for e in edges if e.source in rule_modules and e.target in rule_modules and e.target not in infra]


def cycles(edges: "Sequence[Edge]") -> List[List[str]]:
    """The strongly connected components with more than one module of the module-level graph (Tarjan), each
    as one cycle through its modules."""
    succ: Dict[str, Set[str]] = {}
    for e in edges:
        if e.level == "module":
            succ.setdefault(e.source, set()).add(e.target)
            succ.setdefault(e.target, set())
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    comps: List[List[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    import sys
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10000))
    try:
        for v in sorted(succ):
            if v not in index:
                strong(v)
    finally:
        sys.setrecursionlimit(old)
    return [_one_cycle(sorted(c), succ) for c in comps]


def _one_cycle(comp: List[str], succ: Dict[str, Set[str]]) -> List[str]:
    """A path start -> ... -> start inside one component (breadth-first, so the shortest)."""
    members, start = set(comp), comp[0]
    prev: Dict[str, Optional[str]] = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(succ[v] & members):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])  # type: ignore[arg-type]
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def _explain(edges: "Sequence[Edge]") -> str:
    return "\n".join(f"  {e.source} -> {e.target} ({', '.join(e.names) or 'module'}; line {e.line}, {e.level} level)"
                     for e in edges)


# --------------------------------------------------------------------------- the walker on a planted package


def _plant(tmp: Path) -> Path:
    pkg = tmp / "planted"
    (pkg / "rules").mkdir(parents=True)
    (pkg / "facts").mkdir()
    for d in (pkg, pkg / "rules", pkg / "facts"):
        (d / "__init__.py").write_text("")
    (pkg / "rules" / "base.py").write_text("def rule(**kw):\n    return lambda f: f\n")
    (pkg / "rules" / "one.py").write_text(
        "from planted.rules.base import rule\nfrom planted.facts import shared\n\n@rule(id='X1')\ndef r(ctx, r):\n"
        "    from planted.rules.two import helper\n    return []\n")
    (pkg / "rules" / "two.py").write_text("from .base import rule\n\ndef helper():\n    pass\n\n@rule(id='X2')\n"
                                          "def r(ctx, r):\n    return []\n")
    (pkg / "rules" / "helpers.py").write_text("from planted.rules.two import helper\n")  # defines no rule
    (pkg / "facts" / "shared.py").write_text("from typing import TYPE_CHECKING\nfrom planted.facts import other\n"
                                             "if TYPE_CHECKING:\n    from planted.rules import one\n")
    (pkg / "facts" / "other.py").write_text("import planted.facts.shared\n")
    return tmp


def test_the_walker_finds_a_planted_rule_import_and_cycle(tmp_path):
    root = _plant(tmp_path)
    files, edges = graph(root, "planted")
    bad = rule_to_rule(root, "planted", files, edges)
    # one -> two inside a function is caught; helpers (no rule) may import two; base is infrastructure
    assert [(e.source, e.target, e.names, e.level) for e in bad] == [
        ("planted.rules.one", "planted.rules.two", ("helper",), "function")]
    # shared <-> other is a cycle; shared -> rules.one under TYPE_CHECKING is not an edge that runs
    assert cycles(edges) == [["planted.facts.other", "planted.facts.shared", "planted.facts.other"]]
    assert any(e.level == "typing" and e.target == "planted.rules.one" for e in edges)


def test_relative_imports_resolve(tmp_path):
    root = _plant(tmp_path)
    _, edges = graph(root, "planted")
    assert ("planted.rules.two", "planted.rules.base") in {(e.source, e.target) for e in edges}


# --------------------------------------------------------------------------- envdoctor itself


@functools.lru_cache(maxsize=1)
def _envdoctor() -> Tuple[Dict[str, Path], Tuple[Edge, ...], Tuple[Edge, ...]]:
    files, edges = graph(ROOT, "envdoctor")
    return files, tuple(edges), tuple(rule_to_rule(ROOT, "envdoctor", files, edges))


def test_rule_modules_never_import_rule_modules():
    files, _, r2r = _envdoctor()
    assert len([m for m in files if m.startswith("envdoctor.rules.")]) > 10  # the walker saw the rules
    bad = []
    for e in r2r:
        allowed = ALLOWED.get((e.source, e.target))
        if allowed is None or not set(e.names) <= allowed:
            bad.append(e)
    assert not bad, ("rule modules import other rule modules (move the shared helper to envdoctor/facts/):\n"
                     + _explain(bad))


def test_the_allow_list_has_no_stale_entry():
    _, _, r2r = _envdoctor()
    for pair, names in ALLOWED.items():
        taken: Set[str] = set()
        for e in r2r:
            if (e.source, e.target) == pair:
                taken |= set(e.names)
        assert taken == names, f"{pair}: allowed {sorted(names)}, imported {sorted(taken)}: update ALLOWED"


def test_no_import_cycle_at_module_level():
    _, edges, _ = _envdoctor()
    assert any(e.level == "module" for e in edges)
    found = cycles(edges)
    lines = []
    for cyc in found:
        lines.append("  " + " -> ".join(cyc))
        for a, b in zip(cyc, cyc[1:]):
            lines.append(_explain([e for e in edges if e.level == "module" and (e.source, e.target) == (a, b)][:1]))
    assert not found, "module-level import cycles:\n" + "\n".join(lines)


def test_function_level_imports_are_listed():
    """Not a rule: the imports inside functions (lazy imports keep `check` fast, and some break cycles)."""
    _, edges, _ = _envdoctor()
    inner = [e for e in edges if e.level == "function"]
    print(f"{len(inner)} function-level imports inside envdoctor/:")
    print(_explain(inner))
    assert all(e.source.startswith("envdoctor") for e in inner)


def test_facts_never_import_the_rules_package_at_module_level():
    """Importing any envdoctor.rules.* module first runs envdoctor/rules/__init__.py, which imports every rule
    module, which import envdoctor.facts: a facts module doing that at module level is a circular import at run time
    (the rules package's dynamic imports are invisible to the cycle test)."""
    _, edges, _ = _envdoctor()
    bad = [e for e in edges if e.level == "module" and e.source.startswith("envdoctor.facts")
           and e.target.startswith("envdoctor.rules")]
    assert not bad, "envdoctor.facts imports envdoctor.rules at module level:\n" + _explain(bad)
