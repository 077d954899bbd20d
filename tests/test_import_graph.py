"""The import graph of envdoctor/, read with ast (nothing is imported):

- a rule module (a module under envdoctor/rules/ that registers a rule with @rule) never imports another rule
  module, at module level or inside a function: shared facts live in envdoctor/facts/; the rules' infrastructure
  (base, engine, catalogue, summary) may be imported;
- the import graph has no cycle, counting the imports inside functions as well as those at module level (an import
  in a function runs on its first call, so a cycle through one is a circular import waiting for a caller);
  imports under `if TYPE_CHECKING:` never run, so they do not count. No cycle is tolerated.

What the walker reads as Python runs it: `from M import name` reaches the imports of M's module-level
``__getattr__`` (PEP 562: a package's lazy exports) only when M's body does not bind `name` itself, so `from
envdoctor import __version__` does not import envdoctor.api while `from envdoctor import check` does. Blind spots:
importlib.import_module(variable) (the rules package's catalogue, cli's lazy commands, format plug-ins) and the
implicit import of a module's parent packages.

The walker is tested on a planted package first, so a graph it cannot read fails loudly instead of passing. One
test runs a fresh interpreter for what the walker cannot see: that importing the context loads no rule module.
"""
from __future__ import annotations

import ast
import functools
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

ROOT = Path(__file__).resolve().parents[1]

INFRASTRUCTURE = {"base", "engine", "catalogue", "summary"}

# Rule -> rule imports allowed, each naming exactly what it takes: none (the framework choosers live in
# facts/choices.py, the pin clashes in facts/clashes.py). An entry here needs a reason next to it.
ALLOWED: Dict[Tuple[str, str], Set[str]] = {}

# The node of a module's own PEP 562 ``__getattr__``: its imports run for the names the module's body leaves to it.
LAZY = ":__getattr__"

# What every module has without binding it
_MODULE_ATTRIBUTES = {"__name__", "__file__", "__doc__", "__path__", "__spec__", "__loader__", "__package__",
                      "__builtins__", "__dict__"}


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
    """Every import of one file onto a module of `modules`, with the level it runs at. The imports inside a
    module-level ``def __getattr__`` come from that function's node (`module` + LAZY)."""
    mod = module_name(root, path)
    is_package = path.name == "__init__.py"
    out: List[Edge] = []

    def add(source: str, target: str, names: Tuple[str, ...], line: int, level: str) -> None:
        if target in modules and target != mod:
            out.append(Edge(source, target, names, line, level))

    def visit(node: ast.AST, level: str, source: str) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                add(source, name, (), node.lineno, level)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(mod, is_package, node)
            plain = []
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:  # `from pkg import submodule`
                    add(source, sub, (), node.lineno, level)
                else:
                    plain.append(alias.name)
            if plain:
                add(source, base, tuple(plain), node.lineno, level)
        if id(node) in lazy:
            source = mod + LAZY
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            level = "typing" if level == "typing" else "function"
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, "typing", source)  # never runs, in a function as at module level
            for child in node.orelse:
                visit(child, level, source)
            return
        for inner in ast.iter_child_nodes(node):
            visit(inner, level, source)

    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    # the module's own __getattr__ (a class's is an ordinary method)
    lazy = {id(n) for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__getattr__"}
    visit(tree, "module", mod)
    return out


def bound_names(path: Path) -> Optional[Set[str]]:
    """The names a module's body binds when it runs (not those bound only under TYPE_CHECKING), or None when the
    module has no module-level ``__getattr__`` (every name it lacks is then an AttributeError, not an import)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: Set[str] = set(_MODULE_ATTRIBUTES)
    lazy = False

    def targets(node: ast.AST) -> None:
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                names.add(n.id)

    def body(stmts: Sequence[ast.stmt]) -> None:
        nonlocal lazy
        for st in stmts:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(st.name)
                lazy = lazy or st.name == "__getattr__"
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in st.names)
            elif isinstance(st, ast.Assign):
                for t in st.targets:
                    targets(t)
            elif isinstance(st, (ast.AnnAssign, ast.AugAssign)):
                targets(st.target)
            elif isinstance(st, ast.If):
                if not _is_type_checking(st.test):
                    body(st.body)
                body(st.orelse)
            elif isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
                if isinstance(st, (ast.For, ast.AsyncFor)):
                    targets(st.target)
                body(st.body)
                body(st.orelse)
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                body(st.body)
            elif isinstance(st, ast.Try):
                body(st.body)
                for h in st.handlers:
                    body(h.body)
                body(st.orelse)
                body(st.finalbody)

    body(tree.body)
    return names if lazy else None


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
    """The modules under `package` and every import between them. An import of a module with a PEP 562
    ``__getattr__`` also reaches that function's node unless every name it takes is bound by the module's body
    (`import M`, which takes no name, reaches it: attributes may be asked for later)."""
    files = {module_name(root, p): p for p in sorted((root / package).rglob("*.py"))}
    modules = set(files)
    edges = [e for p in files.values() for e in edges_of(root, p, modules)]
    bound = {m: bound_names(p) for m, p in files.items()}
    lazy = []
    for e in edges:
        names = bound.get(e.target)
        if names is not None and (not e.names or not set(e.names) <= names):
            lazy.append(Edge(e.source, e.target + LAZY, e.names, e.line, e.level))
    return files, edges + lazy


def rule_to_rule(root: Path, package: str, files: Dict[str, Path], edges: List[Edge]) -> List[Edge]:
    rules_pkg = f"{package}.rules."
    rule_modules = {m for m, p in files.items() if m.startswith(rules_pkg) and is_rule_module(p)}
    infra = {rules_pkg + n for n in INFRASTRUCTURE}
    return [e for e in edges if e.source in rule_modules and e.target in rule_modules and e.target not in infra]


def _module_of(node: str) -> str:
    return node[: -len(LAZY)] if node.endswith(LAZY) else node


def _running(edges: "Sequence[Edge]", skip: "Set[str] | frozenset" = frozenset()) -> Dict[str, Set[str]]:
    """The graph of the imports that run (module and function level), less every edge touching a module of
    `skip`."""
    succ: Dict[str, Set[str]] = {}
    for e in edges:
        if e.level in ("module", "function") and _module_of(e.source) not in skip and _module_of(e.target) not in skip:
            succ.setdefault(e.source, set()).add(e.target)
            succ.setdefault(e.target, set())
    return succ


def components(edges: "Sequence[Edge]", skip: "Set[str] | frozenset" = frozenset()) -> List[List[str]]:
    """The strongly connected components with more than one node of the running graph (Tarjan), each sorted."""
    succ = _running(edges, skip)
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
                comps.append(sorted(comp))

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10000))
    try:
        for v in sorted(succ):
            if v not in index:
                strong(v)
    finally:
        sys.setrecursionlimit(old)
    return sorted(comps)


def cycles(edges: "Sequence[Edge]", skip: "Set[str] | frozenset" = frozenset()) -> List[List[str]]:
    """One cycle through each strongly connected component of the running graph (module-level and function-level
    imports; none through a module of `skip`)."""
    succ = _running(edges, skip)
    return [_one_cycle(c, succ) for c in components(edges, skip)]


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


def describe_cycles(found: List[List[str]], edges: "Sequence[Edge]") -> str:
    """Each cycle as its modules, then the import statement behind each of its steps."""
    lines = []
    for cyc in found:
        lines.append("  " + " -> ".join(cyc))
        for a, b in zip(cyc, cyc[1:]):
            step = [e for e in edges if e.level in ("module", "function") and (e.source, e.target) == (a, b)]
            lines.append("  " + _explain(step[:1]))
    return "\n".join(lines)


# --------------------------------------------------------------------------- the walker on a planted package


def _plant(tmp: Path) -> Path:
    pkg = tmp / "planted"
    (pkg / "rules").mkdir(parents=True)
    (pkg / "facts").mkdir()
    for d in (pkg / "rules", pkg / "facts"):
        (d / "__init__.py").write_text("")
    # a package's lazy exports (PEP 562): `check` is its __getattr__'s, `__version__` its body's
    (pkg / "__init__.py").write_text(
        "__version__ = '1'\nTYPE_CHECKING = False\nif TYPE_CHECKING:\n    from planted.api import check\n\n"
        "def __getattr__(name):\n    from planted import api\n    return getattr(api, name)\n")
    (pkg / "api.py").write_text("def check():\n    from planted import asker, versioned\n")
    (pkg / "versioned.py").write_text("def v():\n    from planted import __version__\n    return __version__\n\n"
                                      "class P:\n    def __getattr__(self, name):\n"
                                      "        from planted.rules import base\n")
    (pkg / "asker.py").write_text("from planted import check\n")
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
    # a cycle only through imports inside functions, and a TYPE_CHECKING import inside a function (no edge)
    (pkg / "facts" / "early.py").write_text("def f():\n    from planted.facts import late\n")
    (pkg / "facts" / "late.py").write_text(
        "TYPE_CHECKING = False\n\ndef g():\n    import planted.facts.early\n\ndef h():\n"
        "    if TYPE_CHECKING:\n        from planted.rules import two\n")
    return tmp


PLANTED_CYCLES = [
    ["planted.api", "planted.asker", "planted:__getattr__", "planted.api"],
    ["planted.facts.early", "planted.facts.late", "planted.facts.early"],
    ["planted.facts.other", "planted.facts.shared", "planted.facts.other"],
]


def test_the_walker_finds_a_planted_rule_import_and_cycle(tmp_path):
    root = _plant(tmp_path)
    files, edges = graph(root, "planted")
    bad = rule_to_rule(root, "planted", files, edges)
    # one -> two inside a function is caught; helpers (no rule) may import two; base is infrastructure
    assert [(e.source, e.target, e.names, e.level) for e in bad] == [
        ("planted.rules.one", "planted.rules.two", ("helper",), "function")]
    # shared <-> other at module level and early <-> late inside functions are cycles; so is asker -> the
    # package's __getattr__ (it asks for a lazy export) -> api -> asker; versioned takes a name the package's
    # body binds, so it does not reach api; the TYPE_CHECKING imports are no edges that run
    assert sorted(cycles(edges)) == PLANTED_CYCLES
    assert ("planted.versioned", "planted", ("__version__",), "function") in {
        (e.source, e.target, e.names, e.level) for e in edges}
    assert not [e for e in edges if e.source == "planted.versioned" and e.target.endswith(LAZY)]
    # a class's __getattr__ is an ordinary method: its imports are the module's, at function level
    assert ("planted.versioned", "planted.rules.base", "function") in {(e.source, e.target, e.level) for e in edges}
    assert not [e for e in edges if e.source.startswith("planted.versioned" + LAZY)]
    typing = {(e.source, e.target) for e in edges if e.level == "typing"}
    assert {("planted.facts.shared", "planted.rules.one"), ("planted.facts.late", "planted.rules.two"),
            ("planted", "planted.api")} <= typing
    assert "planted.facts.late -> planted.facts.early (module; line 4, function level)" in \
        describe_cycles(cycles(edges), edges)


def test_the_walker_leaves_out_the_cycles_through_a_known_module(tmp_path):
    _, edges = graph(_plant(tmp_path), "planted")
    assert sorted(cycles(edges, skip={"planted.asker"})) == PLANTED_CYCLES[1:]
    assert sorted(cycles(edges, skip={"planted"})) == PLANTED_CYCLES[1:]  # its __getattr__ is part of it
    assert ["planted.facts.early", "planted.facts.late"] in components(edges, skip={"planted.asker"})


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


def test_no_import_cycle():
    """Module-level and function-level imports together: a cycle fails, printed with the import behind each step."""
    _, edges, _ = _envdoctor()
    assert any(e.level == "module" for e in edges) and any(e.level == "function" for e in edges)
    found = cycles(edges, skip=set())
    assert not found, ("import cycles (module-level and function-level imports; break each by moving what both "
                       "sides need into a module below them):\n" + describe_cycles(found, edges))


def test_the_data_layer_never_imports_the_rules_package():
    """Importing any envdoctor.rules.* module first runs envdoctor/rules/__init__.py, which imports every rule
    module, which import envdoctor.facts and envdoctor.context: a module below the rules doing that is a circular
    import at run time (the rules package's dynamic imports are invisible to the cycle test). The facts may build
    the rules' records inside a function (the rules are loaded by then); the matrices and the context never import
    the rules package at all."""
    _, edges, _ = _envdoctor()
    bad = [e for e in edges if e.target.startswith("envdoctor.rules") and (
        (e.level == "module" and e.source.startswith("envdoctor.facts"))
        or (e.level != "typing" and (e.source.startswith("envdoctor.knowledge") or e.source == "envdoctor.context")))]
    assert not bad, "the data layer imports envdoctor.rules:\n" + _explain(bad)


def test_importing_the_context_loads_no_rule():
    """What the walker cannot see, in a fresh interpreter: the context a rule reads comes without the rules
    package's catalogue (envdoctor/rules/__init__.py imports every rule module by name)."""
    code = ("import sys\nimport envdoctor.context\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('envdoctor.rules'))))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [], proc.stdout
    proc = subprocess.run([sys.executable, "-c", code.replace("envdoctor.context", "envdoctor.rules.summary")],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    assert "envdoctor.rules.machine" in proc.stdout.split(), proc.stdout + proc.stderr  # the probe sees the catalogue
