"""`fleet report`: the fleet grouped by configuration fingerprint.

The majority configuration, each minority group with what differs from it, the check's findings (its rules
run once per distinct configuration, on that configuration's representative snapshot) counted over the nodes,
nodes that need a reboot, and nodes that lost or hide GPUs.
"""
from __future__ import annotations

import html
from collections import Counter, defaultdict
from typing import Any, Dict, Iterable, List, Optional

from envdoctor import __version__
from envdoctor.doctor import Prepared, build_report, expected_on_cpu
from envdoctor.fleet import fingerprint as F
from envdoctor.fleet.store import Store
from envdoctor.formats.safe_text import printable
from envdoctor.snapshot_io import snapshot_from_data

FLEET_SCHEMA = "envdoctor-fleet-report/1"


def select(rows: List[Dict[str, Any]], where: Dict[str, str]) -> List[Dict[str, Any]]:
    return [r for r in rows if all(r["labels"].get(k) == v for k, v in where.items())]


def groups_of(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """[{fp, nodes}] largest first (ties: by fingerprint, so the order is stable)."""
    by_fp: Dict[str, List[str]] = defaultdict(list)
    for r in rows:
        by_fp[r["fp"]].append(r["node"])
    return [{"fp": fp, "nodes": sorted(nodes)} for fp, nodes in
            sorted(by_fp.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


def judge_configs(store: Store, fps: Iterable[str], prepared: Optional[Prepared]) -> Dict[str, List[Dict[str, str]]]:
    """fp -> the check's findings on that configuration's representative snapshot (rules run once per fp), judged
    exactly as `check --snapshot` judges it: the same rules with the same intent (`expect-cpu` as configured
    here, none stated meaning none expected), so each finding has check's severity."""
    expect_cpu = expected_on_cpu(())
    out = {}
    for fp in fps:
        snap = snapshot_from_data(store.representative(fp), f"configuration {fp}")
        report = build_report(snap, prepared=prepared, expect_cpu=expect_cpu)
        seen = set()
        found = []
        for f in report.findings:
            key = (f.id, f.severity, f.subject or "")
            if f.severity != "ok" and key not in seen:
                seen.add(key)
                found.append({"id": f.id, "severity": f.severity, "title": f.title, "subject": f.subject or ""})
        out[fp] = found
    return out


def by_rule(findings: List[Dict[str, str]]) -> List[Dict[str, Any]]:
    """One entry per (rule, severity), its subjects together (a rule finds one thing per framework, GPU...)."""
    out: Dict[tuple, Dict[str, Any]] = {}
    for f in findings:
        e = out.setdefault((f["id"], f["severity"]), {"id": f["id"], "severity": f["severity"], "title": f["title"],
                                                      "subjects": []})
        if f["subject"] and f["subject"] not in e["subjects"]:
            e["subjects"].append(f["subject"])
    return list(out.values())


def lost_gpus(rows: List[Dict[str, Any]], configs: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Nodes with fewer GPUs than most nodes of their configuration, or GPUs /proc sees but NVML does not."""
    by_base: Dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        by_base[configs[r["fp"]]["base_fp"]][r["gpu_count"]] += 1
    out = []
    for r in rows:
        counts = by_base[configs[r["fp"]]["base_fp"]]
        usual, n = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        why = []
        if r["gpu_count"] < usual:
            why.append(f"sees {r['gpu_count']} GPUs, {usual} on the other {n} nodes of its configuration")
        if r["hidden"]:
            why.append(r["hidden"])
        if why:
            out.append({"node": r["node"], "gpus": r["gpu_count"], "why": "; ".join(why)})
    return out


def build(store: Store, where: Dict[str, str], prepared) -> Dict[str, Any]:
    rows = select(store.latest(), where)
    configs = store.configs()
    groups = groups_of(rows)
    findings = judge_configs(store, [g["fp"] for g in groups], prepared)
    majority = configs[groups[0]["fp"]]["facts"] if groups else {}
    out_groups = []
    counts: Dict[tuple, Dict[str, Any]] = {}
    for i, g in enumerate(groups):
        facts = configs[g["fp"]]["facts"]
        out_groups.append({
            "fingerprint": g["fp"], "majority": i == 0, "count": len(g["nodes"]), "nodes": g["nodes"],
            "differs": [{"fact": k, "majority": a, "here": b} for k, (a, b) in F.diff(majority, facts).items()],
            "facts": facts, "findings": findings[g["fp"]]})
        for f in by_rule(findings[g["fp"]]):  # a node counts once per rule and severity, whatever it names
            c = counts.setdefault((f["id"], f["severity"]), {**f, "subjects": [], "nodes": 0, "configurations": 0})
            c["subjects"] += [x for x in f["subjects"] if x not in c["subjects"]]
            c["nodes"] += len(g["nodes"])
            c["configurations"] += 1
    rank = {"error": 0, "warning": 1, "info": 2}
    return {
        "schema": FLEET_SCHEMA,
        "envdoctor_version": __version__,
        "where": where,
        "nodes": len(rows),
        "configurations": len(groups),
        "groups": out_groups,
        "findings": sorted(counts.values(), key=lambda c: (rank.get(c["severity"], 3), -c["nodes"], c["id"])),
        "reboot": [{"node": r["node"], "why": r["reboot"]} for r in rows if r["reboot"]],
        "lost_gpus": lost_gpus(rows, configs),
    }


# -- renderers ------------------------------------------------------------------------------------
def _names(nodes: List[str], limit: Optional[int] = 30) -> str:
    if limit is None or len(nodes) <= limit:
        return ", ".join(nodes)
    return ", ".join(nodes[:limit]) + f" ... (+{len(nodes) - limit} more; --format json lists all)"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _subjects(subjects: List[str], limit: int = 6) -> str:
    if not subjects:
        return ""
    shown = ", ".join(subjects[:limit]) + (f" (+{len(subjects) - limit} more)" if len(subjects) > limit else "")
    return f" [{shown}]"


def render_text(rep: Dict[str, Any]) -> str:
    # every string here may come from a node's snapshot (GPU names, versions, node names): control characters are
    # shown as escapes, so a snapshot cannot move the cursor, retitle or clear the reader's terminal
    return printable(_text(rep))


def _text(rep: Dict[str, Any]) -> str:
    where = " ".join(f"{k}={v}" for k, v in rep["where"].items())
    lines = [f"envdoctor fleet report: {_plural(rep['nodes'], 'node')}, "
             f"{_plural(rep['configurations'], 'configuration')}" + (f" (where {where})" if where else "")]
    if rep["groups"]:
        lines.append(_summary_line(rep))
    if not rep["groups"]:
        return "\n".join(lines + ["No nodes."]) + "\n"
    for g in rep["groups"]:
        lines.append("")
        if g["majority"]:
            lines.append(f"Majority configuration {g['fingerprint']}: {_plural(g['count'], 'node')}")
            for k, v in g["facts"].items():
                if v:
                    lines.append(f"  {k:<22} {v}")
        else:
            lines.append(f"Minority {g['fingerprint']}: {_plural(g['count'], 'node')}: {_names(g['nodes'])}")
            for d in g["differs"]:
                lines.append(f"  {d['fact']:<22} {d['here'] or '(none)'}   (majority: {d['majority'] or '(none)'})")
        for f in by_rule(g["findings"]):
            lines.append(f"  {f['severity'].upper():<7} {f['id']} {f['title']}{_subjects(f['subjects'])}")
    lines += ["", "Findings (rules run once per configuration):"]
    lines += [f"  {f['severity'].upper():<7} {f['id']} {f['title']}{_subjects(f['subjects'])}: "
              f"{_plural(f['nodes'], 'node')} in {_plural(f['configurations'], 'configuration')}"
              for f in rep["findings"]] or ["  none"]
    lines += ["", "Nodes needing a reboot:"]
    lines += [f"  {r['node']}: {r['why']}" for r in rep["reboot"]] or ["  none"]
    lines += ["", "Lost or hidden GPUs:"]
    lines += [f"  {r['node']}: {r['why']}" for r in rep["lost_gpus"]] or ["  none"]
    return "\n".join(lines) + "\n"


def summary(rep: Dict[str, Any]) -> Dict[str, Any]:
    """The report's verdict at a glance: nodes whose configuration has an error / a warning (each node once), the
    share of the majority configuration, reboots and lost GPUs."""
    err = {n for g in rep["groups"] if any(f["severity"] == "error" for f in g["findings"]) for n in g["nodes"]}
    warn = {n for g in rep["groups"] if any(f["severity"] == "warning" for f in g["findings"])
            for n in g["nodes"]} - err
    major = next((g["count"] for g in rep["groups"] if g["majority"]), 0)
    return {"nodes": rep["nodes"], "with_errors": len(err), "with_warnings": len(warn),
            "error_ids": sorted({f["id"] for f in rep["findings"] if f["severity"] == "error"}),
            "majority_nodes": major, "reboot": len(rep["reboot"]), "lost_gpus": len(rep["lost_gpus"])}


def _summary_line(rep: Dict[str, Any]) -> str:
    s = summary(rep)
    if not s["nodes"]:
        return "No nodes."
    head = (f"{s['with_errors']} of {_plural(s['nodes'], 'node')} with an error"
            + (f" ({', '.join(s['error_ids'])})" if s["error_ids"] else "")
            + f", {s['with_warnings']} with warnings only; the majority configuration covers {s['majority_nodes']}")
    return head + f"; {s['reboot']} need a reboot; {s['lost_gpus']} lost or hid GPUs."


def _md(text: Any) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def render_markdown(rep: Dict[str, Any]) -> str:
    return printable(_markdown(rep))


def _markdown(rep: Dict[str, Any]) -> str:
    lines = ["## envdoctor fleet report", "",
             f"{_plural(rep['nodes'], 'node')}, {_plural(rep['configurations'], 'configuration')}", "",
             f"**Summary:** {_md(_summary_line(rep))}"]
    for g in rep["groups"]:
        title = "Majority" if g["majority"] else "Minority"
        lines += ["", f"### {title} `{g['fingerprint']}`: {_plural(g['count'], 'node')}", ""]
        if not g["majority"]:
            lines += [f"Nodes: {_md(_names(g['nodes']))}", "", "| fact | here | majority |", "| --- | --- | --- |"]
            lines += [f"| {_md(d['fact'])} | {_md(d['here'])} | {_md(d['majority'])} |" for d in g["differs"]]
        else:
            lines += ["| fact | value |", "| --- | --- |"]
            lines += [f"| {_md(k)} | {_md(v)} |" for k, v in g["facts"].items() if v]
        for f in by_rule(g["findings"]):
            lines.append(f"- **{f['severity'].upper()} {f['id']}** {_md(f['title'])}{_md(_subjects(f['subjects']))}")
    lines += ["", "### Findings", "", "| ID | severity | title | subjects | nodes | configurations |",
              "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {f['id']} | {f['severity']} | {_md(f['title'])} | {_md(', '.join(f['subjects']))} | {f['nodes']} | "
              f"{f['configurations']} |" for f in rep["findings"]]
    lines += ["", "### Nodes needing a reboot", ""] + ([f"- {_md(r['node'])}: {_md(r['why'])}" for r in rep["reboot"]]
                                                      or ["None."])
    lines += ["", "### Lost or hidden GPUs", ""] + ([f"- {_md(r['node'])}: {_md(r['why'])}" for r in rep["lost_gpus"]]
                                                   or ["None."])
    return "\n".join(lines) + "\n"


_CSS = ("body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}"
        "td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;vertical-align:top}th{background:#f3f3f3}"
        ".error{color:#b00}.warning{color:#a60}.info{color:#06c}code{font-size:.95em}")


def render_html(rep: Dict[str, Any]) -> str:
    return printable(_html(rep))


def _html(rep: Dict[str, Any]) -> str:
    e = html.escape

    def table(head: List[str], rows: List[List[Any]]) -> str:
        return ("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"
                + "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in rows) + "</table>")

    parts = [f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>envdoctor fleet report</title>"
             f"<style>{_CSS}</style></head><body><h1>envdoctor fleet report</h1>",
             f"<p>{_plural(rep['nodes'], 'node')}, {_plural(rep['configurations'], 'configuration')}</p>",
             f"<p class=\"summary {'error' if summary(rep)['with_errors'] else 'ok'}\"><strong>Summary:</strong> "
             f"{e(_summary_line(rep))}</p>"]
    for g in rep["groups"]:
        kind = "Majority" if g["majority"] else "Minority"
        parts.append(f"<h2>{kind} <code>{e(g['fingerprint'])}</code>: {_plural(g['count'], 'node')}</h2>")
        if g["majority"]:
            parts.append(table(["fact", "value"], [[k, v] for k, v in g["facts"].items() if v]))
        else:
            parts.append(table(["fact", "here", "majority"], [[d["fact"], d["here"], d["majority"]] for d in g["differs"]]))
        parts.append(f"<p>Nodes: {e(', '.join(g['nodes']))}</p>")
        if g["findings"]:
            parts.append("<ul>" + "".join(f"<li class=\"{e(f['severity'])}\">{e(f['severity'].upper())} {e(f['id'])} "
                                          f"{e(f['title'])}{e(_subjects(f['subjects']))}</li>"
                                          for f in by_rule(g["findings"])) + "</ul>")
    parts.append("<h2>Findings</h2>" + table(["ID", "severity", "title", "subjects", "nodes", "configurations"],
                                             [[f["id"], f["severity"], f["title"], ", ".join(f["subjects"]),
                                               f["nodes"], f["configurations"]] for f in rep["findings"]]))
    parts.append("<h2>Nodes needing a reboot</h2>" + table(["node", "why"], [[r["node"], r["why"]] for r in rep["reboot"]]))
    parts.append("<h2>Lost or hidden GPUs</h2>" + table(["node", "GPUs", "why"],
                                                        [[r["node"], r["gpus"], r["why"]] for r in rep["lost_gpus"]]))
    return "".join(parts) + "</body></html>\n"
