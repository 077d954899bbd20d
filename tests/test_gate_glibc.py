"""The target's glibc (--glibc, the default, a snapshot's) decides which manylinux wheels the resolver may pick."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli as main
from tests.index_server import FakeIndex
from tests.test_gate_resolve import RESOLVERS, gate

WARP_LIKE = {"warplike-0.1.0-py3-none-manylinux_2_34_x86_64.whl":
             "Metadata-Version: 2.1\nName: warplike\nVersion: 0.1.0\n"}


@pytest.fixture(params=RESOLVERS)
def resolver(request):
    return request.param


def _ids(data):
    return [f["id"] for u in data["inputs"] for f in u["findings"]]


def test_default_glibc_resolves_a_manylinux_2_34_only_package(tmp_path, resolver):
    with FakeIndex(WARP_LIKE, serve_wheels=True) as idx:
        code, data = gate(tmp_path, resolver, idx.url, "warplike\n", "--cpu", "--python-version", "3.11")
    assert "ED803" not in _ids(data), data
    assert "packages resolved" in data["inputs"][0]["resolver"]


def test_glibc_2_28_finds_no_distribution_and_names_the_glibc(tmp_path, resolver):
    with FakeIndex(WARP_LIKE, serve_wheels=True) as idx:
        code, data = gate(tmp_path, resolver, idx.url, "warplike\n", "--cpu", "--python-version", "3.11",
                          "--glibc", "2.28")
    assert code == 1 and "ED803" in _ids(data)
    msg = next(f["message"] for f in data["inputs"][0]["findings"] if f["id"] == "ED803")
    assert "glibc is taken as 2.28" in msg and "--glibc" in msg


@pytest.mark.parametrize("args", [["--glibc", "abc"], ["--glibc", "2.35", "--platform", "win-amd64"]])
def test_bad_glibc_is_one_line_exit_2(tmp_path, args, capsys):
    import envdoctor.entry as entry

    req = tmp_path / "requirements.txt"
    req.write_text("numpy\n")
    for cmd in (["gate", str(req), "--offline"], ["lock"]):
        with pytest.raises(SystemExit) as done:
            entry.main([*cmd, *args])
        out, err = capsys.readouterr()
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert done.value.code == 2, err
        assert len(lines) == 1 and "--glibc" in lines[0] and out == "", err


def test_a_snapshots_glibc_is_the_targets(tmp_path):
    from envdoctor.snapshot import Snapshot

    snap = Snapshot()
    snap.platform.system, snap.platform.machine, snap.platform.glibc = "Linux", "x86_64", "2.31"
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap.to_dict()))
    req = tmp_path / "requirements.txt"
    req.write_text("numpy\n")
    r = CliRunner().invoke(main, ["gate", str(req), "--offline", "--snapshot", str(path)])
    assert "glibc 2.31" in r.output.splitlines()[0], r.output
    r = CliRunner().invoke(main, ["gate", str(req), "--offline", "--snapshot", str(path), "--glibc", "2.39"])
    assert "glibc 2.39" in r.output.splitlines()[0], r.output
    r = CliRunner().invoke(main, ["gate", str(req), "--offline", "--cpu"])
    assert "glibc 2.35" in r.output.splitlines()[0], r.output
