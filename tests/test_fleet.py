"""envdoctor fleet through the real CLI: ingest from every kind of input, the report's groups, reboots and lost
GPUs, faults (truncated, duplicated, future-dated, wrong-schema snapshots; a store cut short), drift and gate."""
from __future__ import annotations

import datetime
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.fleet_nodes import A10G_535, DRIVER_470, HIDDEN_580, REBOOT_580, node, write_nodes

GATE_FIX = Path(__file__).parent / "fixtures" / "gate"
NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
# the matrices' parsed-form cache of this run only: the user's cache may hold what another envdoctor wrote
CACHE = tempfile.mkdtemp(prefix="envdoctor-fleet-cache-")


def at(days_ago: float) -> str:
    return (NOW - datetime.timedelta(days=days_ago)).isoformat()


def write_tarball(path, nodes, folder=""):
    with tarfile.open(path, "w:gz") as tf:
        for data in nodes:
            raw = json.dumps(data, indent=2).encode()
            info = tarfile.TarInfo(f"{folder}{data['platform']['hostname']}.json")
            info.size = len(raw)
            tf.addfile(info, io.BytesIO(raw))
    return path


def envdoctor(*args, store=None, input=None, env=None):
    e = dict(os.environ)
    e.pop("ENVDOCTOR_FLEET_STORE", None)
    e["ENVDOCTOR_CACHE_DIR"] = CACHE
    e.update(env or {})
    if store is not None:
        e["ENVDOCTOR_FLEET_STORE"] = str(store)
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, env=e,
                          input=input, timeout=300)


def ok(proc, code=0):
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    return proc


def report_json(store, *extra):
    return json.loads(ok(envdoctor("fleet", "report", "--format", "json", *extra, store=store)).stdout)


@pytest.fixture
def planted(tmp_path):
    """20 healthy nodes; planted: an old driver on 3, a pending reboot on 1, a different torch on 5."""
    nodes = [node(f"gpu{i:03d}", at(1)) for i in range(20)]
    nodes += [node(f"old{i}", at(1), gpu=A10G_535) for i in range(3)]
    nodes += [node("reboot0", at(1), gpu=REBOOT_580)]
    nodes += [node(f"torch{i}", at(1), torch_version="2.7.1+cu126") for i in range(5)]
    return write_nodes(tmp_path / "snapshots", nodes)


def test_report_names_exactly_the_planted_minorities(tmp_path, planted):
    store = tmp_path / "fleet.db"
    out = ok(envdoctor("fleet", "ingest", str(planted), store=store)).stdout
    assert "29 snapshots read: 29 new" in out
    rep = report_json(store)
    assert rep["nodes"] == 29 and rep["configurations"] == 4
    majority, *minorities = rep["groups"]
    assert majority["majority"] and majority["nodes"] == [f"gpu{i:03d}" for i in range(20)]
    by_nodes = {tuple(g["nodes"]): {d["fact"]: d for d in g["differs"]} for g in minorities}
    assert set(by_nodes) == {("old0", "old1", "old2"), ("reboot0",), tuple(f"torch{i}" for i in range(5))}
    old = by_nodes[("old0", "old1", "old2")]
    assert old["driver.version"]["here"] == "535.247.01" and old["driver.version"]["majority"] == "580.126.09"
    assert "framework.torch" not in old
    reboot = by_nodes[("reboot0",)]
    assert reboot["driver.state"]["here"] == "version_mismatch"
    assert reboot["driver.kernel_module"]["here"] == "580.173.02" and reboot["driver.userspace"]["here"] == "580.178"
    torch_diff = by_nodes[tuple(f"torch{i}" for i in range(5))]
    assert set(torch_diff) == {"framework.torch"} and "2.7.1+cu126" in torch_diff["framework.torch"]["here"]
    assert [r["node"] for r in rep["reboot"]] == ["reboot0"]
    assert "580.173.02" in rep["reboot"][0]["why"] and "580.178" in rep["reboot"][0]["why"]
    assert rep["lost_gpus"] == []
    # the check's rules ran once per configuration: the mismatch rule counts the one node
    ed013 = [f for f in rep["findings"] if f["id"] == "ED013"]
    assert ed013 and ed013[0]["nodes"] == 1 and ed013[0]["configurations"] == 1
    assert sum(len(g["nodes"]) for g in rep["groups"]) == 29

    text = ok(envdoctor("fleet", "report", store=store)).stdout
    assert "Minority" in text and "old0, old1, old2" in text and "reboot0: kernel module 580.173.02" in text
    md = ok(envdoctor("fleet", "report", "--format", "markdown", store=store)).stdout
    assert "### Minority" in md and "| driver.version | 535.247.01 | 580.126.09 |" in md


def test_html_report_is_one_self_contained_page(tmp_path, planted):
    store = tmp_path / "fleet.db"
    ok(envdoctor("fleet", "ingest", str(planted), store=store))
    out = tmp_path / "fleet.html"
    ok(envdoctor("fleet", "report", "--format", "html", "-o", str(out), store=store))

    class Scan(HTMLParser):
        tables, refs = 0, []

        def handle_starttag(self, tag, attrs):
            self.tables += tag == "table"
            self.refs += [v for k, v in attrs if k in ("src", "href") and v]

    scan = Scan()
    scan.feed(out.read_text())
    assert scan.refs == []  # no external assets
    assert scan.tables >= 4 + 3  # a table per group, then findings, reboots, lost GPUs
    assert "reboot0" in out.read_text()


def test_every_format_opens_with_the_summary(tmp_path, planted):
    store = tmp_path / "fleet.db"
    ok(envdoctor("fleet", "ingest", str(planted), store=store))
    rep = report_json(store)
    erring = sorted({n for g in rep["groups"] if any(f["severity"] == "error" for f in g["findings"]) for n in g["nodes"]})
    ids = sorted({f["id"] for f in rep["findings"] if f["severity"] == "error"})
    want = f"{len(erring)} of 29 nodes with an error" + (f" ({', '.join(ids)})" if ids else "") + ", "
    html = tmp_path / "fleet.html"
    ok(envdoctor("fleet", "report", "--format", "html", "-o", str(html), store=store))
    page = html.read_text()
    first_h2 = page.index("<h2>")
    assert "<strong>Summary:</strong> " + want in page[:first_h2], page[:first_h2]  # before the first group
    assert "the majority configuration covers 20; 1 need a reboot; 0 lost or hid GPUs." in page[:first_h2]
    text = ok(envdoctor("fleet", "report", store=store)).stdout.splitlines()
    assert text[1].startswith(want), text[:3]
    md = ok(envdoctor("fleet", "report", "--format", "markdown", store=store)).stdout
    assert md.split("###", 1)[0].rstrip().endswith("covers 20; 1 need a reboot; 0 lost or hid GPUs."), md[:400]
    assert erring, rep["findings"]  # the planted old drivers are errors: the summary has something to count


def test_ingest_reads_folders_jsonl_tarballs_and_stdin_idempotently(tmp_path):
    store = tmp_path / "fleet.db"
    folder = write_nodes(tmp_path / "dir", [node("a1", at(2)), node("a2", at(2))])
    jsonl = tmp_path / "more.jsonl"
    jsonl.write_text("".join(json.dumps(node(f"j{i}", at(2))) + "\n" for i in range(3)))
    tgz = write_tarball(tmp_path / "nodes.tar.gz", [node(f"t{i}", at(2)) for i in range(2)], folder="collect/")
    # kubectl logs of many pods: pretty-printed documents one after the other
    piped = "".join(json.dumps(node(f"s{i}", at(2)), indent=2) + "\n" for i in range(2))
    out = ok(envdoctor("fleet", "ingest", str(folder), str(jsonl), str(tgz), "-", store=store, input=piped)).stdout
    assert "9 snapshots read: 9 new, 0 already in the store, 0 bad" in out
    again = ok(envdoctor("fleet", "ingest", str(folder), str(jsonl), str(tgz), store=store)).stdout
    assert "7 snapshots read: 0 new, 7 already in the store" in again
    rep = report_json(store)
    assert rep["nodes"] == 9
    assert sorted(rep["groups"][0]["nodes"]) == ["a1", "a2", "j0", "j1", "j2", "s0", "s1", "t0", "t1"]


def test_bad_snapshots_are_reported_with_their_file_and_skipped(tmp_path):
    store = tmp_path / "fleet.db"
    good = [node(f"n{i}", at(1)) for i in range(3)]
    folder = write_nodes(tmp_path / "in", good)
    (folder / "cut.json").write_text(json.dumps(node("cut", at(1)), indent=2)[:700])  # a node died mid-write
    (folder / "dup.json").write_text(json.dumps(good[0]))  # n0 once more, in another file
    (folder / "future.json").write_text(json.dumps(node("future", (NOW + datetime.timedelta(days=3)).isoformat())))
    wrong = node("wrong", at(1))
    wrong["schema_version"] = "7.0"
    (folder / "wrong.json").write_text(json.dumps(wrong))
    typed = node("typed", at(1))
    typed["gpus"] = "two"
    (folder / "typed.json").write_text(json.dumps(typed))
    proc = ok(envdoctor("fleet", "ingest", str(folder), store=store))
    assert "8 snapshots read: 3 new, 1 already in the store, 4 bad (skipped)" in proc.stdout
    err = proc.stderr.splitlines()
    assert len(err) == 4 and all(line.startswith("envdoctor: skipped ") for line in err)
    why = {Path(line.split()[2].rsplit(":", 2)[0]).name: line for line in err}
    assert "not valid JSON" in why["cut.json"]
    assert "in the future" in why["future.json"]
    assert "unsupported snapshot schema_version '7.0'" in why["wrong.json"]
    assert "snapshot.gpus: expected a list" in why["typed.json"]
    assert report_json(store)["nodes"] == 3
    assert ok(envdoctor("fleet", "ingest", "--strict", str(folder / "cut.json"), store=store), code=1)


def test_a_tarball_cut_short_keeps_what_was_read(tmp_path):
    tgz = write_tarball(tmp_path / "nodes.tar.gz", [node(f"t{i:02d}", at(1)) for i in range(40)])
    data = tgz.read_bytes()
    tgz.write_bytes(data[: len(data) // 2])
    store = tmp_path / "fleet.db"
    proc = ok(envdoctor("fleet", "ingest", str(tgz), store=store))
    assert "tarball damaged or cut short" in proc.stderr and str(tgz) in proc.stderr
    n = report_json(store)["nodes"]
    assert 0 < n < 40


def test_a_store_cut_short_is_rebuilt_from_its_inputs(tmp_path, planted):
    store = tmp_path / "fleet.db"
    ok(envdoctor("fleet", "ingest", "--label", "partition=a", str(planted), store=store))
    piped = json.dumps(node("late", at(0.5))) + "\n"
    ok(envdoctor("fleet", "ingest", "-", store=store, input=piped))
    before = report_json(store)
    ok(envdoctor("fleet", "ingest", str(planted), store=store))  # merges the WAL into the store file
    size = store.stat().st_size
    with open(store, "r+b") as fh:
        fh.truncate(size // 3)
    for p in (Path(f"{store}-wal"), Path(f"{store}-shm")):
        if p.exists():
            p.unlink()
    damaged = store.read_bytes()
    # a report only reads: it says the store is damaged and how to rebuild it, and leaves the file alone
    proc = envdoctor("fleet", "report", "--format", "json", store=store)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert "is damaged" in proc.stderr and "fleet ingest --rebuild" in proc.stderr and "3 ingests" in proc.stderr
    assert store.read_bytes() == damaged
    proc = ok(envdoctor("fleet", "ingest", "--rebuild", store=store))
    assert "was damaged" in proc.stderr and "rebuilt from 3 ingests" in proc.stderr
    after = report_json(store)
    assert after["nodes"] == before["nodes"] == 30
    assert [g["nodes"] for g in after["groups"]] == [g["nodes"] for g in before["groups"]]
    assert any(p.name.startswith("fleet.db.damaged-") for p in tmp_path.iterdir())
    assert report_json(store, "--where", "partition=a")["nodes"] == 29  # the labels came back too


def test_a_store_with_no_ledger_is_one_line_error(tmp_path):
    store = tmp_path / "fleet.db"
    store.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    proc = envdoctor("fleet", "report", store=store)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "is damaged" in proc.stderr


def test_lost_and_hidden_gpus(tmp_path):
    nodes = [node(f"n{i}", at(1)) for i in range(5)] + [node("lost", at(1), drop_gpus=1),
                                                         node("hidden", at(1), gpu=HIDDEN_580)]
    store = tmp_path / "fleet.db"
    ok(envdoctor("fleet", "ingest", str(write_nodes(tmp_path / "in", nodes)), store=store))
    rep = report_json(store)
    lost = {r["node"]: r["why"] for r in rep["lost_gpus"]}
    assert set(lost) == {"lost", "hidden"}
    assert "sees 1 GPUs, 2 on the other 6 nodes" in lost["lost"]
    assert "/proc/driver/nvidia/gpus lists 3 GPUs" in lost["hidden"]


def test_probe_fleet_keeps_the_node_name(tmp_path):
    plain = json.loads(ok(envdoctor("probe", "--format", "json")).stdout)
    assert plain["platform"]["hostname"] in ("<redacted>", "")
    named = json.loads(ok(envdoctor("probe", "--format", "json", "--node-name", "rack7-n3")).stdout)
    assert named["platform"]["hostname"] == "rack7-n3" and named["created"]
    slurm = json.loads(ok(envdoctor("probe", "--format", "json", "--fleet", env={"SLURMD_NODENAME": "sn1"})).stdout)
    assert slurm["platform"]["hostname"] == "sn1"
    store = tmp_path / "fleet.db"
    # a redacted snapshot: in a file of its own the file names the node; in a JSON-lines file it cannot
    (tmp_path / "named-by-file.json").write_text(json.dumps(plain))
    (tmp_path / "many.jsonl").write_text(json.dumps(plain) + "\n" + json.dumps(named) + "\n")
    proc = ok(envdoctor("fleet", "ingest", str(tmp_path / "named-by-file.json"), str(tmp_path / "many.jsonl"),
                        store=store))
    assert "3 snapshots read: 2 new" in proc.stdout and "many.jsonl:1: no node name" in proc.stderr
    assert sorted(report_json(store)["groups"][0]["nodes"]) == ["named-by-file", "rack7-n3"]


def test_drift_names_what_changed_per_node(tmp_path):
    store = tmp_path / "fleet.db"
    day1 = [node(f"n{i}", at(3)) for i in range(4)]
    ok(envdoctor("fleet", "ingest", str(write_nodes(tmp_path / "d1", day1)), store=store))
    day2 = [node("n0", at(1)), node("n1", at(1), gpu=A10G_535), node("n2", at(1), torch_version="2.7.1+cu126"),
            node("n9", at(1))]
    ok(envdoctor("fleet", "ingest", str(write_nodes(tmp_path / "d2", day2)), store=store))
    res = json.loads(ok(envdoctor("fleet", "drift", "--since", at(2)[:10], "--format", "json", store=store)).stdout)
    changed = {c["node"]: {x["fact"]: (x["before"], x["after"]) for x in c["changes"]} for c in res["changed"]}
    assert set(changed) == {"n1", "n2"}
    assert changed["n1"]["driver.version"] == ("580.126.09", "535.247.01")
    assert set(changed["n2"]) == {"framework.torch"}
    assert res["unchanged"] == 1
    assert [n["node"] for n in res["new"]] == ["n9"] and [n["node"] for n in res["not_seen_since"]] == ["n3"]
    text = ok(envdoctor("fleet", "drift", "--since", at(2), store=store)).stdout
    assert "2 nodes changed" in text and "580.126.09 -> 535.247.01" in text
    bad = envdoctor("fleet", "drift", "--since", "last tuesday", store=store)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_gate_names_the_nodes_that_would_fail(tmp_path):
    """rise-gen's requirements (torch 2.3.0+cu121 from the cu121 index) need driver >= 525.60.13."""
    store = tmp_path / "fleet.db"
    ok(envdoctor("fleet", "ingest", "--label", "partition=new",
                 str(write_nodes(tmp_path / "new", [node(f"a{i}", at(1)) for i in range(4)])), store=store))
    ok(envdoctor("fleet", "ingest", "--label", "partition=old",
                 str(write_nodes(tmp_path / "old", [node(f"v{i}", at(1), gpu=DRIVER_470) for i in range(2)])),
                 store=store))
    req = str(GATE_FIX / "rise-gen" / "requirements_cu121.txt")
    proc = ok(envdoctor("fleet", "gate", req, "--format", "json", store=store), code=1)
    res = json.loads(proc.stdout)
    assert res["failing_nodes"] == ["v0", "v1"] and res["nodes"] == 6
    failing = [c for c in res["configurations"] if c["fails"]]
    assert len(failing) == 1 and {p["id"] for p in failing[0]["problems"]} == {"ED100"}
    assert any("470.63.01" in p["message"] for p in failing[0]["problems"])
    assert ok(envdoctor("fleet", "gate", req, "--where", "partition=new", store=store)).stdout.count("FAIL") == 0
    text = ok(envdoctor("fleet", "gate", req, "--where", "partition=old", store=store), code=1).stdout
    assert "2 would fail" in text and "ED100" in text and "requirements_cu121.txt:10" in text


def test_report_without_a_store_is_one_line_error(tmp_path):
    proc = envdoctor("fleet", "report", store=tmp_path / "none.db")
    assert proc.returncode == 2 and "does not exist" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    proc = envdoctor("fleet", "ingest", "--label", "oops", str(tmp_path), store=tmp_path / "x.db")
    assert proc.returncode == 2 and "KEY=VALUE" in proc.stderr
