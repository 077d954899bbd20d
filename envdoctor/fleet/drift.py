"""`fleet drift --since DATE`: what changed on each node between its state at DATE and its latest snapshot.

A node's state at DATE is its newest snapshot taken at or before DATE; facts are compared as the fingerprint
sees them (envdoctor.fleet.fingerprint.facts), plus the GPU count and the labels.
"""
from __future__ import annotations

import datetime
from typing import Any, Dict, List, Optional

from envdoctor.errors import BadInput
from envdoctor.fleet import fingerprint as F
from envdoctor.fleet.report import select
from envdoctor.fleet.store import Store
from envdoctor.formats.safe_text import printable

DRIFT_SCHEMA = "envdoctor-fleet-drift/1"


def parse_date(text: str, option: str) -> str:
    try:
        dt = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"{option} {text!r}: expected an ISO 8601 date or time (2026-11-30 or 2026-11-30T12:00:00)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    return dt.astimezone(datetime.timezone.utc).isoformat()


def run(store: Store, since: str, until: Optional[str], where: Dict[str, str]) -> Dict[str, Any]:
    configs = store.configs()
    by_node: Dict[str, List[Dict[str, Any]]] = {}
    for r in store.history():
        if until is None or r["taken_at"] <= until:
            by_node.setdefault(r["node"], []).append(r)  # ordered by taken_at
    changed, new, unseen, same = [], [], [], 0
    for node, hist in sorted(by_node.items()):
        if not select(hist[-1:], where):
            continue
        before = [r for r in hist if r["taken_at"] <= since]
        after = hist[-1]
        if not before:
            new.append({"node": node, "first_seen": hist[0]["taken_at"]})
            continue
        old = before[-1]
        if old is after:
            unseen.append({"node": node, "last_seen": old["taken_at"]})
            continue
        changes = [{"fact": k, "before": a, "after": b}
                   for k, (a, b) in F.diff(configs[old["fp"]]["facts"], configs[after["fp"]]["facts"]).items()]
        for key in sorted(set(old["labels"]) | set(after["labels"])):
            if old["labels"].get(key) != after["labels"].get(key):
                changes.append({"fact": f"label.{key}", "before": old["labels"].get(key, ""),
                                "after": after["labels"].get(key, "")})
        if changes:
            changed.append({"node": node, "from": old["taken_at"], "to": after["taken_at"], "changes": changes})
        else:
            same += 1
    return {"schema": DRIFT_SCHEMA, "since": since, "until": until, "changed": changed, "unchanged": same,
            "new": new, "not_seen_since": unseen}


def render_text(res: Dict[str, Any]) -> str:
    # facts and names come from the nodes' snapshots: no control character reaches the terminal
    return printable(_text(res))


def _text(res: Dict[str, Any]) -> str:
    lines = [f"envdoctor fleet drift since {res['since']}" + (f" until {res['until']}" if res["until"] else "")
             + f": {len(res['changed'])} nodes changed, {res['unchanged']} unchanged, {len(res['new'])} new, "
             f"{len(res['not_seen_since'])} not seen since"]
    for c in res["changed"]:
        lines.append(f"\n{c['node']} ({c['from']} -> {c['to']}):")
        lines += [f"  {x['fact']:<22} {x['before'] or '(none)'} -> {x['after'] or '(none)'}" for x in c["changes"]]
    if res["new"]:
        lines.append("\nNew nodes: " + ", ".join(n["node"] for n in res["new"]))
    if res["not_seen_since"]:
        lines.append("\nNot seen since: " + ", ".join(f"{n['node']} (last {n['last_seen']})" for n in res["not_seen_since"]))
    return "\n".join(lines) + "\n"
