"""`envdoctor probe --fleet` through the real CLI: the node name it promises to keep is kept when it is this host's
name (the normal case on a real node), and a node name that could escape `-o DIR/%N.json` is refused."""
from __future__ import annotations

import json

from tests.test_fleet import envdoctor, ok, report_json
from tests.test_fleet_faults import one_line


def fake_root(tmp_path, hostname):
    """A machine image whose host name is `hostname`: probe --root reads /etc/hostname there."""
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "hostname").write_text(hostname + "\n")
    return root


def test_probe_fleet_keeps_a_node_name_equal_to_the_host_name(tmp_path):
    root = fake_root(tmp_path, "gpu-node-17")
    env = {"ENVDOCTOR_NODE_NAME": "", "SLURMD_NODENAME": ""}
    plain = json.loads(ok(envdoctor("probe", "--format", "json", "--root", str(root), env=env)).stdout)
    assert plain["platform"]["hostname"] == "<redacted>"  # without --fleet it stays redacted
    snap = json.loads(ok(envdoctor("probe", "--format", "json", "--fleet", "--root", str(root), env=env)).stdout)
    assert snap["platform"]["hostname"] == "gpu-node-17"
    named = json.loads(ok(envdoctor("probe", "--format", "json", "--node-name", "gpu-node-17", "--root", str(root),
                                    env=env)).stdout)
    assert named["platform"]["hostname"] == "gpu-node-17"
    # the documented kubectl-logs flow: many snapshots in one stream, each named by its own host name
    store = tmp_path / "fleet.db"
    proc = ok(envdoctor("fleet", "ingest", "-", store=store, input=json.dumps(snap, indent=2) + "\n"
                        + json.dumps(dict(snap, platform=dict(snap["platform"], hostname="gpu-node-18"))) + "\n"))
    assert "2 snapshots read: 2 new" in proc.stdout and "no node name" not in proc.stderr
    assert report_json(store)["groups"][0]["nodes"] == ["gpu-node-17", "gpu-node-18"]
    # -o DIR/%N.json names the file after it too
    out = tmp_path / "out"
    out.mkdir()
    ok(envdoctor("probe", "--format", "json", "--fleet", "--root", str(root), "-o", str(out / "%N.json"), env=env))
    assert json.loads((out / "gpu-node-17.json").read_text())["platform"]["hostname"] == "gpu-node-17"


def test_a_node_name_that_could_escape_the_output_folder_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    root = fake_root(tmp_path, "gpu-node-17")
    target = str(out / "%N.json")
    for name in ("../escaped", "", ".", "..", "a/b", "-rf", "x" * 254, "node\nname"):
        line = one_line(envdoctor("probe", "--fleet", "--node-name", name, "--root", str(root), "-o", target))
        assert "is not usable" in line and repr(name) in line
    for var in ("ENVDOCTOR_NODE_NAME", "SLURMD_NODENAME"):
        line = one_line(envdoctor("probe", "--fleet", "--root", str(root), "-o", target, env={var: "../up"}))
        assert "'../up'" in line and f"${var}" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "root"] and list(out.iterdir()) == []
    ok(envdoctor("probe", "--fleet", "--node-name", "rack7-n3.example_1", "--root", str(root), "-o", target))
    assert [p.name for p in out.iterdir()] == ["rack7-n3.example_1.json"]
