"""fleet report and fleet gate agree with the single-machine commands on the same snapshot, through the real CLI:
a finding counted once per node with check's severity and its subject, fleet gate failing where lock --check
says the lock no longer fits, and no terminal escape from a snapshot reaching the terminal."""
from __future__ import annotations

import json

from tests.fleet_nodes import A100_580, node, nvidia_part
from tests.snapfactory import jax, machine, tensorflow, torch
from tests.test_fleet import at, envdoctor, ok, report_json


def cpu_builds_node(name: str, kernel: str) -> dict:
    """A node with two A100s and CPU-only torch, tensorflow and jax: ED400 once per framework."""
    snap = machine(frameworks=[torch("2.8.0"), tensorflow("2.17.0"), *jax("0.4.30")])
    part = nvidia_part(A100_580)
    snap.driver, snap.gpus = part.driver, part.gpus
    snap.platform.hostname, snap.platform.kernel, snap.created = name, kernel, at(1)
    return snap.to_dict()


def test_a_finding_counts_once_per_node_with_checks_severity_and_its_subjects(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    nodes = [cpu_builds_node("c0", "6.8.0-1"), cpu_builds_node("c1", "6.8.0-1"), cpu_builds_node("c2", "6.8.0-2"),
             cpu_builds_node("c3", "6.8.0-3")]  # 4 nodes in 3 configurations
    for n in nodes:
        (folder / f"{n['platform']['hostname']}.json").write_text(json.dumps(n))
    check = json.loads(envdoctor("check", "--snapshot", str(folder / "c0.json"), "--format", "json").stdout)
    expected = sorted((f["id"], f["severity"], f["subject"]) for f in check["findings"] if f["id"] == "ED400")
    assert [(i, sev) for i, sev, _ in expected] == [("ED400", "error")] * 3
    store = tmp_path / "fleet.db"
    ok(envdoctor("fleet", "ingest", str(folder), store=store))
    rep = report_json(store)
    assert rep["nodes"] == 4 and rep["configurations"] == 3
    (ed400,) = [f for f in rep["findings"] if f["id"] == "ED400"]
    assert ed400["nodes"] == 4 and ed400["configurations"] == 3 and ed400["severity"] == "error"
    assert sorted(ed400["subjects"]) == sorted(s for _, _, s in expected)
    for g in rep["groups"]:  # each group: check's findings on its snapshot, once each, with their subjects
        assert sorted((f["id"], f["severity"], f["subject"]) for f in g["findings"] if f["id"] == "ED400") == expected
    text = ok(envdoctor("fleet", "report", store=store)).stdout
    assert "ED400 A CPU-only build on a machine with a usable NVIDIA GPU [jax 0.4.30, tensorflow 2.17.0, " \
           "torch 2.8.0]: 4 nodes in 3 configurations" in text
    per_group = [ln for ln in text.splitlines() if ln.startswith("  ERROR   ED400")]
    assert len(per_group) == 3 + 1  # once per group, once in the summary
    assert all("torch 2.8.0" in ln and "WARNING" not in ln for ln in per_group)


def test_fleet_gate_fails_where_lock_check_says_the_lock_no_longer_fits(tmp_path):
    lock = tmp_path / "requirements-cuda.txt"
    ok(envdoctor("lock", "--driver", "580.126.09", "--gpu", "sm_80", "--python-version", "3.11", "--platform",
                 "linux-x86_64", "-o", str(lock)))
    driverless = machine(frameworks=[torch("2.8.0+cu128", cuda="12.8")])
    driverless.platform.hostname, driverless.created = "nodrv0", at(1)
    good = node("a100n0", at(1))
    snaps = {}
    for data in (driverless.to_dict(), good):
        snaps[data["platform"]["hostname"]] = tmp_path / f"{data['platform']['hostname']}.json"
        snaps[data["platform"]["hostname"]].write_text(json.dumps(data))
    verdicts = {name: envdoctor("lock", "--check", str(lock), "--snapshot", str(path)) for name, path in snaps.items()}
    assert verdicts["nodrv0"].returncode == 1 and "no longer fits" in verdicts["nodrv0"].stdout
    assert verdicts["a100n0"].returncode == 0 and "fits" in verdicts["a100n0"].stdout
    store = tmp_path / "fleet.db"
    ok(envdoctor("fleet", "ingest", *map(str, snaps.values()), store=store))
    proc = ok(envdoctor("fleet", "gate", str(lock), "--format", "json", store=store), code=1)
    res = json.loads(proc.stdout)
    assert res["failing_nodes"] == ["nodrv0"]  # exactly where lock --check says no
    (failing,) = [c for c in res["configurations"] if c["fails"]]
    assert [p["id"] for p in failing["problems"]] == ["lock-check"]
    assert "no usable NVIDIA driver" in failing["problems"][0]["message"]
    text = ok(envdoctor("fleet", "gate", str(lock), store=store), code=1).stdout
    assert "FAIL" in text and "nodrv0" in text and "lock --check: no longer fits" in text


def test_terminal_escapes_from_a_snapshot_do_not_reach_the_terminal(tmp_path):
    evil = node("evil0", at(1))
    for g in evil["gpus"]:
        g["name"] = "NVIDIA A100\x1b]0;owned\x07 \x1b[2J\x9b31m\r"
    (tmp_path / "evil0.json").write_text(json.dumps(evil))
    store = tmp_path / "fleet.db"
    ok(envdoctor("fleet", "ingest", str(tmp_path / "evil0.json"), store=store))
    for fmt in ("text", "markdown", "html"):
        out = ok(envdoctor("fleet", "report", "--format", fmt, store=store)).stdout
        assert not any(c in out for c in "\x1b\x07\x9b\r"), (fmt, repr(out))
        assert "NVIDIA A100\\x1b]0;owned\\x07 \\x1b[2J\\x9b31m\\x0d" in out, fmt
    # JSON keeps the data as it is (escaped by JSON itself)
    assert any("\x1b]0;owned" in v for v in report_json(store)["groups"][0]["facts"].values())
