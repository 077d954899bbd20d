"""The matrices' compiled cache: built from the TOML, read back without it, rebuilt when the data
changes, and never able to run code."""
from __future__ import annotations

import json
import shutil

import pytest

from envdoctor.knowledge import compiled as C
from envdoctor.knowledge import load as L
from envdoctor.knowledge import load_matrices

from .cli_run import run
from .snapfactory import machine, torch

PARTS = ("collected", "warnings", "sources", "table_collected", "cuda_releases", "mvc", "archs", "gpus",
         "pytorch_releases", "conda", "tensorflow_releases", "jax_releases", "cudnn_releases", "incompatibilities",
         "deprecated_distributions", "driver_branches", "amd_targets", "amd_gpus")
NEW_GPU = '''
[[gpu]]
name = "NVIDIA Testcard 9000"
cc = "8.9"
segment = "datacenter"
source = "a test row"
verified = "UNVERIFIED: a test row"
'''


@pytest.fixture
def data(tmp_path, monkeypatch):
    """A copy of the bundled tables, an overlay folder and a private cache root; no racy window (the copies are new:
    the window itself is tests/test_cache.py's)."""
    from envdoctor import cache

    monkeypatch.setattr(cache, "RACY_S", 0.0)
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVDOCTOR_NO_PARSE_CACHE", raising=False)
    bundled = tmp_path / "bundled"
    shutil.copytree(L.bundled_dir(), bundled)
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    return bundled, overlay


def _same(a, b):
    for name in PARTS:
        assert getattr(a, name) == getattr(b, name), name


def _no_toml(monkeypatch):
    """Reading a table file from now on fails the test: what follows must come from the compiled cache."""
    def refuse(*a, **k):
        raise AssertionError("a TOML table was read")

    monkeypatch.setattr(L, "read_table_file", refuse)


def test_built_once_then_read_without_the_toml(data, monkeypatch):
    bundled, overlay = data
    first = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    entry = json.loads(C.cache_path().read_text())  # plain JSON
    assert entry["format"] == C.FORMAT and len(entry["key"]) == 64
    _no_toml(monkeypatch)
    second = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    _same(first, second)
    assert second.torch_variant("2.5.1", "cu121").arch_list == first.torch_variant("2.5.1", "cu121").arch_list
    monkeypatch.undo()
    monkeypatch.setenv("ENVDOCTOR_NO_PARSE_CACHE", "1")  # the uncached path agrees
    _same(load_matrices(cache_dir=overlay, bundled_dir=bundled), second)


def test_rebuilt_when_a_bundled_table_or_an_overlay_changes(data):
    bundled, overlay = data
    before = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    key = json.loads(C.cache_path().read_text())["key"]
    assert before.gpu_info("NVIDIA Testcard 9000") is None
    with open(bundled / "gpus.toml", "a") as f:
        f.write(NEW_GPU)
    after = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    assert after.gpu_info("NVIDIA Testcard 9000").cc == "8.9"
    key2 = json.loads(C.cache_path().read_text())["key"]
    assert key2 != key
    # an overlay file appearing in the cache folder is another input, so another key
    shutil.copy(bundled / "gpus.toml", overlay / "gpus.toml")
    with open(overlay / "gpus.toml", "a") as f:
        f.write(NEW_GPU.replace("Testcard 9000", "Testcard 9001"))
    overlaid = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    assert overlaid.gpu_info("NVIDIA Testcard 9001") is not None
    assert str(overlay / "gpus.toml") in overlaid.sources["gpus"]
    assert json.loads(C.cache_path().read_text())["key"] not in (key, key2)


def test_warnings_about_the_data_survive_a_hit(data, monkeypatch):
    bundled, overlay = data
    with open(bundled / "gpus.toml", "a") as f:
        f.write('\n[[gpu]]\nname = "Broken"\nsource = "x"\nverified = "x"\n')  # no cc: skipped with a warning
    first = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    assert any("gpus.toml" in w and "Broken" in w for w in first.warnings)
    _no_toml(monkeypatch)
    assert load_matrices(cache_dir=overlay, bundled_dir=bundled).warnings == first.warnings


@pytest.mark.parametrize("poison", [
    {"__row__": "system", "command": "touch {marker}"},  # not a row class
    {"__row__": "GpuInfo", "name": "x", "cc": "8.0", "source": "s", "verified": "v", "__class__": "os.system"},
    {"__row__": "_Row"},
    {"__row__": "__import__('os').system('touch {marker}')"},
])
def test_a_tampered_cache_runs_nothing_and_is_rebuilt(data, tmp_path, poison):
    bundled, overlay = data
    good = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    marker = tmp_path / "ran"
    entry = json.loads(C.cache_path().read_text())
    bad = json.loads(json.dumps(poison).replace("{marker}", str(marker)))
    entry["parts"]["gpus"].insert(0, bad)
    C.cache_path().write_text(json.dumps(entry))
    again = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    _same(good, again)
    assert not marker.exists()
    assert bad not in json.loads(C.cache_path().read_text())["parts"]["gpus"]  # overwritten by a good one


def test_a_broken_or_foreign_cache_file_is_ignored(data):
    bundled, overlay = data
    good = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    for text in ("{not json", json.dumps({"format": C.FORMAT, "key": "0" * 64, "parts": {}}), "[]", "\x00\x01"):
        C.cache_path().write_text(text)
        _same(load_matrices(cache_dir=overlay, bundled_dir=bundled), good)


def test_an_unwritable_cache_only_means_building(data, tmp_path, monkeypatch):
    bundled, overlay = data
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(blocker / "sub"))  # under a file: nothing can be created
    m = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    assert m.torch_variant("2.5.1", "cu121") is not None and not C.cache_path().exists()


def test_check_through_the_cli_reads_the_cache(tmp_path):
    snap = machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                   frameworks=[torch("2.5.1", cuda="12.4")])
    snap_file = tmp_path / "snap.json"
    snap_file.write_text(json.dumps(snap.to_dict()))
    env = {"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache"), "ENVDOCTOR_NO_PARSE_CACHE": None}
    first = run("check", "--snapshot", str(snap_file), "--format", "json", env=env)
    assert first.returncode in (0, 1), first.stderr
    cached = tmp_path / "cache" / "compiled" / "matrices.json"
    assert json.loads(cached.read_text())["format"] == C.FORMAT
    stamp = cached.stat().st_mtime_ns
    second = run("check", "--snapshot", str(snap_file), "--format", "json", env=env)
    assert json.loads(second.stdout)["findings"] == json.loads(first.stdout)["findings"]
    assert cached.stat().st_mtime_ns == stamp  # read, not written again


def _no_content_read(monkeypatch):
    """Hashing the inputs' bytes from now on fails the test: the stat key alone must decide."""
    def refuse(*a, **k):
        raise AssertionError("the inputs' bytes were hashed")

    monkeypatch.setattr(C, "_digest", refuse)
    _no_toml(monkeypatch)


def test_a_hit_on_unchanged_files_reads_none_of_them(data, monkeypatch):
    bundled, overlay = data
    first = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    entry = json.loads(C.cache_path().read_text())
    assert entry["stat"] == C._stat_key(bundled, overlay) and entry["key"] == C._digest(bundled, overlay)
    _no_content_read(monkeypatch)
    _same(load_matrices(cache_dir=overlay, bundled_dir=bundled), first)


def test_a_touched_table_is_judged_by_its_content(data, monkeypatch):
    """Same bytes, other stat facts (touched, copied): the content key matches, nothing is rebuilt, and the entry
    learns the new stat key; other bytes of the same size under a new mtime: rebuilt."""
    import os

    bundled, overlay = data
    first = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    old = json.loads(C.cache_path().read_text())
    st = os.stat(bundled / "gpus.toml")
    os.utime(bundled / "gpus.toml", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    _no_toml(monkeypatch)
    _same(load_matrices(cache_dir=overlay, bundled_dir=bundled), first)
    new = json.loads(C.cache_path().read_text())
    assert new["key"] == old["key"] and new["stat"] != old["stat"] and new["stat"] == C._stat_key(bundled, overlay)
    monkeypatch.undo()
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(C.cache_path().parent.parent))
    text = (bundled / "gpus.toml").read_text()
    assert '"NVIDIA A100-SXM4-80GB"' in text
    (bundled / "gpus.toml").write_text(text.replace('"NVIDIA A100-SXM4-80GB"', '"NVIDIA Z100-SXM4-80GB"', 1))
    st2 = os.stat(bundled / "gpus.toml")
    assert st2.st_size == st.st_size
    os.utime(bundled / "gpus.toml", ns=(st.st_atime_ns, st.st_mtime_ns + 2 * 10**9))
    changed = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    assert changed.gpu_info("NVIDIA Z100-SXM4-80GB") is not None
    assert json.loads(C.cache_path().read_text())["key"] != old["key"]


def _machines():
    """A spread of fake machines: healthy, old driver, no driver, a Kepler GPU, WSL, tensorflow and jax builds, a
    toolkit and cuDNN on disk, the snapshot this machine's probes took."""
    from envdoctor.snapshot import Cudnn, Snapshot, Toolkit

    from .snapfactory import jax, tensorflow

    out = [
        machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                frameworks=[torch("2.5.1", cuda="12.4", cudnn="9.1.0")]),
        machine(driver="470.82.01", driver_cuda="11.4", gpus=["Tesla T4:7.5", "Tesla T4:7.5"],
                frameworks=[torch("2.3.1+cu121", cuda="12.1", cudnn="8.9.2")]),
        machine(frameworks=[torch("2.1.2+cu121", cuda="12.1", cudnn="8.9.2")]),
        machine(driver="535.104.05", driver_cuda="12.2", gpus=["Tesla K80:3.7"],
                frameworks=[torch("2.1.2+cu121", cuda="12.1")], ld_library_path=["/usr/local/cuda-11.8/lib64"],
                gpu_env={"CUDA_VISIBLE_DEVICES": ""}),
        machine(driver="551.23", driver_cuda="12.4", gpus=["NVIDIA GeForce RTX 4090:8.9"], wsl=2,
                frameworks=[torch("2.5.1", cuda="12.4")]),
        machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA H100 80GB HBM3:9.0"],
                frameworks=[tensorflow("2.15.0", cuda="12.2", cudnn="8.9"), *jax("0.4.30", plugin="jax-cuda12-plugin")],
                toolkits=[Toolkit(path="/usr/local/cuda-12.2", version="12.2.140", is_default=True)],
                cudnn=[Cudnn(version="8.9.7", kind="header", path="/usr/include/cudnn_version.h")]),
    ]
    here = run("probe", "--format", "json")
    if here.returncode == 0:
        out.append(Snapshot.from_dict(json.loads(here.stdout)))
    return out


def test_reports_agree_from_the_toml_a_build_and_a_stat_hit(data, monkeypatch):
    """Every report is the same whether the data came from the TOML (no cache), from a build that stored the
    cache, or from a hit the stat key alone allowed (the straightforward path against the fast one)."""
    from envdoctor import doctor
    from envdoctor.rules.engine import COMMAND_FAMILIES, select_rules

    bundled, overlay = data
    rules = select_rules(families=COMMAND_FAMILIES["check"], command="check")
    machines = _machines()
    assert len(machines) >= 6
    monkeypatch.setenv("ENVDOCTOR_NO_PARSE_CACHE", "1")
    plain = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    monkeypatch.delenv("ENVDOCTOR_NO_PARSE_CACHE")
    built = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    _no_content_read(monkeypatch)
    hit = load_matrices(cache_dir=overlay, bundled_dir=bundled)
    for snap in machines:
        reports = [doctor.build_report(snap, prepared=(rules, m, list(m.warnings))) for m in (plain, built, hit)]
        docs = [json.dumps([f.to_dict() for f in r.findings]) for r in reports]
        assert docs[0] == docs[1] == docs[2]
