"""AMD GPUs for ROCm builds (matrices/amd_gpus.toml): each GPU's LLVM target and the ROCm releases AMD's Linux
compatibility matrix lists each target in, shown by `envdoctor matrices show amd_gpus` and matched against names as
the real tools print them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor.knowledge import load_matrices
from envdoctor.parsers.rocm import parse_amd_smi_static, parse_rocm_smi_productname

FIX = Path(__file__).parent / "fixtures" / "rocm"


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return load_matrices(cache_dir=tmp_path_factory.mktemp("no-cache"))


def _show(capsys, monkeypatch, tmp_path):
    from envdoctor.entry import main

    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "no-cache"))
    with pytest.raises(SystemExit) as exc:
        main(["matrices", "show", "amd_gpus", "--format", "json"])
    out = capsys.readouterr()
    assert exc.value.code == 0, out.err
    return json.loads(out.out)


def test_show_lists_targets_and_gpus_with_their_sources(capsys, monkeypatch, tmp_path):
    rows = _show(capsys, monkeypatch, tmp_path)
    targets = {r["gfx"]: r for r in rows if r["kind"] == "target"}
    gpus = {r["name"]: r for r in rows if r["kind"] == "gpu"}
    # the GPUs, with the targets AMD's specification table gives them
    for name, gfx in (("AMD Instinct MI300X", "gfx942"), ("AMD Instinct MI325X", "gfx942"),
                      ("AMD Instinct MI250X", "gfx90a"), ("AMD Instinct MI210", "gfx90a"),
                      ("AMD Radeon PRO W7900", "gfx1100"), ("AMD Radeon RX 7900 XTX", "gfx1100")):
        assert gpus[name]["gfx"] == gfx, name
    assert all(g["gfx"] in targets for g in gpus.values())
    for r in rows:
        assert "github.com/ROCm/" in r["source"] and r["verified"] and not r["unverified"], r
    assert targets["gfx942"]["rocm_first"] == "6.0" and targets["gfx942"]["status"] == "supported"
    assert targets["gfx1100"]["rocm_first"] == "5.7"
    assert targets["gfx906"]["status"] == "deprecated" and targets["gfx1101"]["status"] == "unlisted"


@pytest.mark.parametrize("gfx, rocm, listed", [
    ("gfx942", "5.7", False), ("gfx942", "6.0.2", True), ("gfx942", "6.3", True),
    ("gfx942", "7.0", None),  # newer than any matrix read: the data cannot say
    ("gfx1100", "5.7", True), ("gfx90a", "6.2.4", True), ("gfx906", "6.1", True),
    ("gfx1101", "6.2", False), ("gfx900", "6.0", False), ("gfx90a", "5.4.2", None),
])
def test_listed_in_compares_rocm_series_within_the_range_read(m, gfx, rocm, listed):
    assert m.amd_target(gfx).listed_in(rocm) is listed


def test_names_as_the_real_tools_print_them(m):
    # rocm-smi --showproductname --csv on 2x MI100: "Arcturus GL-XL [AMD Instinct MI100]"
    names = parse_rocm_smi_productname((FIX / "rocm_smi_showproductname_mi100_csv.txt").read_text())
    assert names and all(m.amd_gfx_for_gpu(n) == "gfx908" for n in names)
    # amd-smi static on an MI350X: a gfx950 part AMD's tables read here do not list -> no guess
    names = parse_amd_smi_static((FIX / "amd_smi_static_mi350x.txt").read_text())
    assert names == ["AMD Instinct MI350X"] and m.amd_gfx_for_gpu(names[0]) is None
    # rocm-smi json on an MI250X names it only "MI200 (MCM)": both MI250 and MI250X fit, so no row is picked
    names = parse_rocm_smi_productname((FIX / "rocm_smi_showproductname_mi250x.json").read_text())
    assert names and m.amd_gpu_info(names[0]) is None


@pytest.mark.parametrize("name, gfx", [
    ("AMD Radeon RX 7900 XTX", "gfx1100"), ("Navi 31 [Radeon RX 7900 XT/7900 XTX]", "gfx1100"),
    ("AMD Radeon PRO W7900 Dual Slot", "gfx1100"), ("AMD Radeon RX 6800 XT", "gfx1030"),
    ("AMD Instinct MI50 32GB", "gfx906"), ("gfx90a:sramecc+:xnack-", "gfx90a"), ("NVIDIA A100", None),
    ("AMD Radeon RX 7900", None),
])
def test_name_matching_is_word_wise(m, name, gfx):
    assert m.amd_gfx_for_gpu(name) == gfx


def test_a_cache_row_with_a_bad_target_is_refused(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "amd_gpus.toml").write_text(
        'schema = "amd_gpus/v1"\ncollected = "2026-12-01"\n\n[[target]]\ngfx = "sm_90"\narch = "Hopper"\n'
        'status = "supported"\nread_from = "5.7"\nlisted_through = "6.3.3"\nsource = "x"\nverified = "y"\n',
        encoding="utf-8")
    m = load_matrices(cache_dir=cache)
    assert any("amd_gpus.toml" in w and "LLVM AMDGPU target" in w for w in m.warnings), m.warnings
    assert m.amd_target("gfx942") is not None and m.amd_target("sm_90") is None


# -- ED432: a ROCm build against the host's AMD GPU target, through `envdoctor check --snapshot` --------------------

def _check(tmp_path, fw_version, rocm, gpus):
    from envdoctor.probes import accelerators
    from tests import snapfactory as sf
    from tests.cli_run import run

    snap = sf.machine(frameworks=[sf.torch(fw_version, rocm=rocm)])
    snap.rocm.installed, snap.rocm.version, snap.rocm.gpus = True, rocm, list(gpus)
    accelerators.probe(None, snap)
    path = tmp_path / "snap.json"
    path.write_text(snap.to_json())
    proc = run("check", "--snapshot", str(path), "--format", "json", "--only", "ED432",
               env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "no-cache")})
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)["findings"]


def test_ed432_mi300x_with_a_rocm_5_7_build(tmp_path):
    fs = _check(tmp_path, "2.2.0+rocm5.7", "5.7", ["AMD Instinct MI300X"])
    assert len(fs) == 1 and fs[0]["severity"] == "warning", fs
    f = fs[0]
    assert "ROCm 5.7 build" in f["message"] and "gfx942" in f["message"] and "from ROCm 6.0" in f["message"]
    assert any("ROCm 6.0 or newer" in x for x in f["fix"])
    assert any("compatibility-matrix-historical-6.0.csv" in e["source"] for e in f["evidence"])


def test_ed432_silent_when_the_release_lists_the_target(tmp_path):
    assert _check(tmp_path, "2.4.1+rocm6.1", "6.1", ["AMD Instinct MI300X", "AMD Radeon RX 7900 XTX"]) == []
    # a release newer than the matrices read is not judged, nor is a GPU the data cannot name
    assert _check(tmp_path, "2.9.0+rocm7.0", "7.0", ["AMD Radeon RX 7800 XT"]) == []
    assert _check(tmp_path, "2.4.1+rocm6.1", "6.1", ["AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2"]) == []


def test_ed432_unlisted_target_and_deprecated_target(tmp_path):
    fs = _check(tmp_path, "2.4.1+rocm6.1", "6.1", ["AMD Radeon RX 7800 XT", "AMD Instinct MI50"])
    assert len(fs) == 2 and {f["severity"] for f in fs} == {"info"}, fs
    rx, mi50 = sorted(fs, key=lambda f: "MI50" in f["message"])
    # AMD supports gfx1101 in no ROCm release read; a framework may still compile it, so only info
    assert "gfx1101" in rx["message"] and "unlisted" in rx["message"] and "arch list" in rx["message"]
    assert "gfx906" in mi50["message"] and "deprecated" in mi50["message"]
