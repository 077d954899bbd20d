"""`fleet gate FILE... [--where partition=X]`: `envdoctor gate`'s judgement against every distinct configuration.

The install inputs are read and planned once per configuration (on its representative snapshot), so a fleet of
10,000 nodes in 4 configurations costs 4 gate runs; the answer names the nodes of each failing configuration.
An input that is a lock written by `envdoctor lock` is also asked what `lock --check FILE --snapshot S` answers
for each configuration (the same code): a lock that no longer fits a configuration fails its nodes.
"""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

from envdoctor.doctor import prepare_judgement
from envdoctor.errors import BadInput
from envdoctor.fleet.report import groups_of, select
from envdoctor.fleet.store import Store
from envdoctor.formats.safe_text import printable
from envdoctor.gate.core import input_problems
from envdoctor.gate.inputs import load_inputs
from envdoctor.gate.plan import judge, plan_unit
from envdoctor.gate.render import describe_target
from envdoctor.infile import read_text
from envdoctor.lock.core import check_lock_on, is_lock
from envdoctor.snapshot_io import snapshot_from_data

GATE_SCHEMA = "envdoctor-fleet-gate/1"


def run(store: Store, files: Sequence[str], where: Dict[str, str], strict: bool = False, only: Sequence[str] = (),
        skip: Sequence[str] = (), fresh: bool = False, pre: bool = False) -> Dict[str, Any]:
    """`envdoctor gate`'s judgement of `files` on each distinct configuration of the nodes selected by `where`."""
    # the same reading as gate's (envdoctor/gate/trust.py): no ${VAR} expanded, includes kept in the repository
    units, problems = load_inputs(list(files), env={})
    if problems:
        input_problems(problems, "text")
    rules, matrices, warnings = prepare_judgement(list(only), list(skip))
    if matrices is None:
        raise BadInput("the compatibility data cannot be loaded: " + "; ".join(warnings))
    locks = {}
    for unit in units:
        try:
            text = read_text(unit.path)
        except (OSError, ValueError):
            continue  # load_inputs read it just now; a file that changed since has nothing more to say
        if is_lock(text):
            locks[unit.path] = text
    rows = select(store.latest(), where)
    configs: List[Dict[str, Any]] = []
    failing_nodes: List[str] = []
    for g in groups_of(rows):
        snap = snapshot_from_data(store.representative(g["fp"]), f"configuration {g['fp']}")
        problems_here = []
        for unit in units:
            plan = plan_unit(unit, snap, matrices, selected=(), pre=pre)
            _over, located = judge(plan, snap, matrices, rules, fresh=fresh)
            for x in located:
                if x.finding.severity == "error" or (strict and x.finding.severity == "warning"):
                    problems_here.append({"input": unit.path, "id": x.finding.id, "severity": x.finding.severity,
                                          "message": x.finding.message,
                                          "locations": [str(loc) for loc in x.locs]})
            if unit.path in locks:
                problems_here += _lock_problems(matrices, unit.path, locks[unit.path], snap, g["fp"])
        if problems_here:
            failing_nodes.extend(g["nodes"])
        configs.append({"fingerprint": g["fp"], "target": describe_target(snap, "fleet configuration"),
                        "nodes": g["nodes"], "fails": bool(problems_here), "problems": problems_here})
    return {"schema": GATE_SCHEMA, "inputs": [u.path for u in units], "where": where, "strict": strict,
            "nodes": len(rows), "failing_nodes": sorted(failing_nodes), "configurations": configs}


def _lock_problems(matrices: Any, path: str, text: str, snap: Any, fp: str) -> List[Dict[str, Any]]:
    """What `lock --check` says of the lock on this configuration, as problems (none when it fits)."""
    try:
        result = check_lock_on(matrices, path, text, snap, f"configuration {fp}")
    except BadInput as exc:
        problems = [f"lock --check cannot judge this configuration: {exc}"]
    else:
        problems = [] if result.ok else [f"lock --check: no longer fits: {p}" for p in result.problems]
    return [{"input": path, "id": "lock-check", "severity": "error", "message": p, "locations": []} for p in problems]


def render_text(res: Dict[str, Any]) -> str:
    # facts and names come from the nodes' snapshots: no control character reaches the terminal
    return printable(_text(res))


def _text(res: Dict[str, Any]) -> str:
    where = " ".join(f"{k}={v}" for k, v in res["where"].items())
    n_fail = len(res["failing_nodes"])
    lines = [f"envdoctor fleet gate: {', '.join(res['inputs'])} on {res['nodes']} nodes"
             + (f" (where {where})" if where else "") + f": {n_fail} would fail"]
    if not res["nodes"]:
        lines.append("No nodes match.")
    for c in res["configurations"]:
        verdict = "FAIL" if c["fails"] else "ok"
        names = ", ".join(c["nodes"][:30]) + (f" ... (+{len(c['nodes']) - 30} more)" if len(c["nodes"]) > 30 else "")
        lines += ["", f"{verdict:<4} {c['fingerprint']} ({len(c['nodes'])} nodes: {names})", f"     {c['target']}"]
        for p in c["problems"]:
            at = ", ".join(p["locations"]) or p["input"]
            lines.append(f"     {p['severity'].upper()} {p['id']} {at}: {p['message']}")
    return "\n".join(lines) + "\n"
