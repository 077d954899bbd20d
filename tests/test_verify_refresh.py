"""`envdoctor matrices verify` and `refresh` against a local index built from recorded real metadata.

The index (tests/index_server.py) serves the Requires-Dist / Requires-Python lines recorded from the
public index (tests/fixtures/index/recorded, SOURCES.toml) as PEP 658 metadata files. Future releases
are simulated by taking a real release's metadata and changing only its version (said where done).
"""
import json
import os

import pytest

from envdoctor.knowledge import index as I
from envdoctor.knowledge import load as L
from envdoctor.knowledge import load_matrices
from envdoctor.knowledge import refresh as R
from envdoctor.knowledge.verify import verify
from tests.index_server import FakeIndex, all_recorded, closed_port_url, future_torch

TORCH_2_16_EXTRA = [f"torch-2.16.0-cp3{n}-cp3{n}-manylinux_2_28_x86_64.whl" for n in (12, 13, 14, 15)]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setattr(I, "BACKOFF", 0.0)
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "no-cache"))  # never the user's real cache
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)


def run(capsys, *args):
    """`envdoctor ARGS` in-process: (exit code, stdout, stderr)."""
    from envdoctor.entry import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def bumped(rec, old_wheel: str, old: str, new: str):
    """A future release simulated from a recorded one: same metadata, version `old` -> `new`."""
    text = rec[old_wheel].replace(f"Version: {old}", f"Version: {new}")
    return {old_wheel.replace(f"-{old}-", f"-{new}-"): text}


# --------------------------------------------------------------------------- verify


@pytest.mark.parametrize("mode", ["json", "html"])
def test_verify_passes_on_recorded_metadata(mode):
    m = load_matrices()
    with FakeIndex(all_recorded(), mode=mode) as idx:
        result = verify(m, I.IndexClient([idx.url], timeout=5))
        assert idx.wheel_downloads() == []
    assert result.disagreements == [], "\n".join(d.line() for d in result.disagreements)
    assert result.exit_code() == 0
    missing = {(x.project, x.version) for x in result.missing}
    # every torch patch and every tensorflow/jax release that was recorded was really compared (the recording holds
    # torch from 1.13; the older patches are "not on index")
    recorded = {w.split("-")[1] for w in all_recorded() if w.startswith("torch-")}
    for rel in m.pytorch_releases:
        for p in rel.patches:
            assert (("torch", p) in missing) == (p not in recorded), p
    for v in ("2.14.0", "2.15.0", "2.21.0"):
        assert ("tensorflow", v) not in missing
    for v in ("0.4.30", "0.7.2", "0.12.0.1"):
        assert ("jax", v) not in missing and ("jax-cuda12-plugin", v) not in missing
    assert result.compared > 300
    # releases the recording does not hold are "not on index", never disagreements
    assert ("tensorflow", "2.4.0") in missing


def _tampered(rec, wheel, old, new):
    assert old in rec[wheel]
    rec = dict(rec)
    rec[wheel] = rec[wheel].replace(old, new)
    return rec


def test_tampered_torch_cudnn_pin_is_reported(capsys):
    rec = _tampered(all_recorded(), "torch-2.1.1-cp310-cp310-manylinux1_x86_64.whl",
                    "nvidia-cudnn-cu12 (==8.9.2.26)", "nvidia-cudnn-cu12 (==8.9.7.29)")
    with FakeIndex(rec) as idx:
        code, out, _ = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "pytorch",
                           "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["exit_code"] == 1
    got = [(d["release"], d["field"], d["table_value"], d["index_value"]) for d in data["disagreements"]]
    assert got == [("torch 2.1.1", "cudnn (variant cu121)", "8.9.2.26", "8.9.7.29")]
    d = data["disagreements"][0]
    assert d["row"].split(":")[0].endswith("pytorch.toml")
    assert d["metadata"].endswith("torch-2.1.1-cp310-cp310-manylinux1_x86_64.whl.metadata")
    # in the newest patch of a release the variant's nvidia_pins are compared too
    rec = _tampered(all_recorded(), "torch-2.1.2-cp310-cp310-manylinux1_x86_64.whl",
                    "nvidia-nccl-cu12 (==2.18.1)", "nvidia-nccl-cu12 (==2.18.3)")
    with FakeIndex(rec) as idx:
        code, out, _ = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "pytorch",
                           "--format", "json")
    got = [(d["release"], d["field"], d["table_value"], d["index_value"]) for d in json.loads(out)["disagreements"]]
    assert code == 1 and got == [("torch 2.1.2", "nvidia_pins[nvidia-nccl-cu12] (variant cu121)", "==2.18.1", "==2.18.3")]


def test_tampered_pins_in_every_table(capsys):
    rec = all_recorded()
    rec = _tampered(rec, "torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl", "Requires-Python: >=3.11",
                    "Requires-Python: >=3.12")
    rec = _tampered(rec, "tensorflow-2.18.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                    "nvidia-nccl-cu12 ==2.21.5", "nvidia-nccl-cu12 ==2.21.6")
    rec = _tampered(rec, "jax_cuda13_plugin-0.9.2-cp312-cp312-manylinux_2_27_x86_64.whl",
                    "nvidia-cudnn-cu13<10.0,>=9.12.0.46", "nvidia-cudnn-cu13<10.0,>=9.13.0.50")
    with FakeIndex(rec) as idx:
        code, out, _ = run(capsys, "matrices", "verify", "--index-url", idx.url)
    assert code == 1
    assert "torch 2.15.0: requires_python: table says >=3.11, index says >=3.12" in out
    assert "tensorflow 2.18.0: and_cuda[nvidia-nccl-cu12]: table says ==2.21.5, index says ==2.21.6" in out
    assert "plugins.cuda13.cudnn: table says <10.0,>=9.12.0.46, index says <10.0,>=9.13.0.50" in out
    assert "plugins.cuda13.cudnn_min: table says 9.12.0.46, index says 9.13.0.50" in out
    disagreements = out.split("not counted as disagreements")[0]
    assert disagreements.count("table says") == 4 and "4 disagreement(s)" in out


def test_not_on_index_is_not_a_disagreement_unless_strict(capsys):
    rec = {k: v for k, v in all_recorded().items() if not k.startswith("torch-2.0.1-")}
    with FakeIndex(rec) as idx:
        code, out, _ = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "pytorch")
        line = next(x for x in out.splitlines() if "not on index: torch " in x)
        assert code == 0 and "2.0.1" in line.split(": torch ", 1)[1].split(", ")
        code, out, _ = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "pytorch", "--strict")
        assert code == 1


def test_verify_with_nothing_readable_is_not_success(capsys):
    with FakeIndex(all_recorded(), mode="nometa") as idx:
        code, out, _ = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "tensorflow")
        assert code == 2 and "nothing could be compared" in out
        # no metadata file and the wheels are not served: one range request per wheel, refused, then given up
        assert idx.whole_wheel_requests() == [] and len(idx.wheel_downloads()) == len(set(idx.wheel_downloads()))
    assert "METADATA not readable by range requests: range request answered HTTP 404" in out


# --------------------------------------------------------------------------- refresh


def _index_with_future(extra=None):
    rec = all_recorded()
    rec.update(future_torch())  # derived from the real 2.15.0 metadata, version changed (SOURCES.toml)
    rec.update(extra or {})
    return FakeIndex(rec, extra_files=TORCH_2_16_EXTRA)


def test_refresh_adds_a_new_torch_release(capsys, tmp_path):
    cache = tmp_path / "cache" / "matrices"
    before = load_matrices(cache_dir=cache)
    assert before.newest_known("torch") == "2.15.0" and before.torch_release("2.16.0") is None
    with _index_with_future() as idx:
        code, out, err = run(capsys, "matrices", "refresh", "--index-url", idx.url, "--cache-dir", str(cache))
        assert idx.wheel_downloads() == []
        assert code == 0, err
        assert "added torch 2.16.0" in out and f"wrote {cache / 'pytorch.toml'}" in out
        # the derived rows agree with the metadata they were derived from
        vcode, vout, _ = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "pytorch",
                             "--cache-dir", str(cache), "--format", "json")
        vdata = json.loads(vout)
        assert vcode == 0 and vdata["disagreements"] == []
        assert not any(x["version"] == "2.16.0" for x in vdata["missing"])
    assert sorted(p.name for p in cache.iterdir()) == ["pytorch.toml"]  # nothing new for tensorflow / jax

    m = load_matrices(cache_dir=cache)
    assert m.warnings == []
    assert m.newest_known("torch") == "2.16.0"
    rel = m.torch_release("2.16.0")
    assert rel.has_patch("2.16.0") and rel.python == ">=3.11,<3.16" and rel.requires_python == ">=3.11"
    dv = m.torch_default_variant("2.16.0")
    assert dv.name == "cu132" and dv.cuda == "13.2" and dv.cuda_toolkit == "13.2.2"
    assert dv.cudnn == "9.26.0.51" and dv.nvidia_pins["nvidia-cudnn-cu13"] == "==9.26.0.51"
    assert dv.arch_list == m.torch_variant("2.15.0", "cu132").arch_list and dv.arch_unverified
    for row in (rel, dv, rel.patch("2.16.0")):
        assert row.verified.startswith("UNVERIFIED: derived by envdoctor matrices refresh from index metadata on ")
        assert row.source == idx.url.replace("/simple/", "/files/") + \
            "torch-2.16.0-cp311-cp311-manylinux_2_28_x86_64.whl.metadata"
    assert "arch list assumed from torch 2.15 cu132" in dv.verified
    assert m.torch_variant("2.16.0", "cpu") is not None
    assert rel.patch("2.16.0").triton == "~=3.9.0"
    # the lines that hold only for some Pythons keep their markers, as the wheel's Requires-Dist says them
    assert rel.patch("2.16.0").triton_marker == 'platform_system == "Linux" and python_version < "3.16"'
    assert dv.pin_markers == {"cuda-bindings": 'platform_system == "Linux" and python_version < "3.15"'}
    # the bundled rows are untouched
    assert m.torch_default_variant("2.15.0").verified == before.torch_default_variant("2.15.0").verified


def test_refresh_new_patch_new_tensorflow_and_jax(tmp_path):
    rec = all_recorded()
    extra = {}
    extra.update(bumped(rec, "torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl", "2.15.0", "2.15.1"))
    extra.update(bumped(rec, "tensorflow-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl", "2.21.0", "2.22.0"))
    extra.update(bumped(rec, "jax-0.12.0.1-py3-none-any.whl", "0.12.0.1", "0.12.1"))
    # the jax 0.12.1 metadata still pins the 0.12.0.1 plugins (only its own version was changed)
    cache = tmp_path / "c"
    with _index_with_future(extra) as idx:
        result = R.refresh(I.IndexClient([idx.url], timeout=5))
        R.write_cache(result, cache)
    assert sorted(p.name for p in cache.iterdir()) == ["jax.toml", "pytorch.toml", "tensorflow.toml"]
    m = load_matrices(cache_dir=cache)
    assert m.warnings == []
    # a new patch of a known series: the release row gains the patch, its variants stay the bundled ones
    rel = m.torch_release("2.15.1")
    assert rel.version == "2.15" and rel.has_patch("2.15.1") and rel.has_patch("2.15.0")
    assert rel.patch("2.15.1").verified.startswith("UNVERIFIED") and "patch 2.15.1 added by envdoctor" in rel.note
    assert rel.default_variant().origin.split(":")[0] == str(L.bundled_dir() / "pytorch.toml")
    assert m.newest_known("torch") == "2.16.0"
    tf = m.tf_release("2.22.0")
    assert tf.tested == "2.22.0" and tf.cuda == "12.5" and tf.cudnn == "9.3"
    assert tf.and_cuda["nvidia-cudnn-cu12"] == "<10.0,>=9.3.0.75" and tf.unverified
    assert tf.gpu_platforms == m.tf_release("2.21.0").gpu_platforms
    jx = m.jax_release("0.12.1")
    assert jx.version == "0.12.1" and jx.jaxlib == "<=0.12.0.1,>=0.11.2"
    assert jx.plugins["cuda13"].cudnn_min == "9.12.0.46" and jx.plugins["cuda13"].unverified
    assert jx.plugins["cuda12"].driver_min == m.jax_release("0.12.0.1").plugins["cuda12"].driver_min


def test_refresh_when_nothing_is_new_removes_a_stale_cache(capsys, tmp_path):
    cache = tmp_path / "c"
    with _index_with_future() as idx:
        assert run(capsys, "matrices", "refresh", "--index-url", idx.url, "--cache-dir", str(cache))[0] == 0
    assert (cache / "pytorch.toml").exists()
    with FakeIndex(all_recorded()) as idx:
        code, out, _ = run(capsys, "matrices", "refresh", "--index-url", idx.url, "--cache-dir", str(cache))
    assert code == 0 and "removed" in out and not (cache / "pytorch.toml").exists()


def test_refresh_dry_run_and_json(capsys, tmp_path):
    cache = tmp_path / "c"
    with _index_with_future() as idx:
        code, out, _ = run(capsys, "matrices", "refresh", "--index-url", idx.url, "--cache-dir", str(cache),
                           "--dry-run", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["dry_run"] and data["written"] == [] and not cache.exists()
    assert [r["version"] for r in data["tables"]["pytorch"]["rows"]["patch"]] == ["2.16.0"]


@pytest.mark.parametrize("how", ["refused", "500", "garbage", "timeout"])
def test_refresh_offline_writes_nothing(capsys, tmp_path, how):
    cache = tmp_path / "c"
    cache.mkdir()
    keep = cache / "jax.toml"
    keep.write_text("# an earlier refresh\n")
    args = ["matrices", "refresh", "--cache-dir", str(cache)]
    if how == "refused":
        code, out, err = run(capsys, *args, "--index-url", closed_port_url())
    else:
        mode = {"500": "500", "garbage": "garbage", "timeout": "slow"}[how]
        with FakeIndex(all_recorded(), mode=mode, delay=1.5) as idx:
            code, out, err = run(capsys, *args, "--index-url", idx.url, "--timeout", "0.3")
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("envdoctor: error: ") and "Traceback" not in err
    assert sorted(p.name for p in cache.iterdir()) == ["jax.toml"] and keep.read_text() == "# an earlier refresh\n"


def test_write_is_atomic(monkeypatch, tmp_path):
    cache = tmp_path / "c"
    cache.mkdir()
    (cache / "pytorch.toml").write_text("# previous\n")
    with _index_with_future() as idx:
        result = R.refresh(I.IndexClient([idx.url], timeout=5))

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(R.os, "replace", broken_replace)
    with pytest.raises(R.RefreshError) as exc:
        R.write_cache(result, cache)
    assert "nothing written" in str(exc.value)
    assert sorted(p.name for p in cache.iterdir()) == ["pytorch.toml"]  # no temp file left behind
    assert (cache / "pytorch.toml").read_text() == "# previous\n"

    # a derived table the loader would reject is never installed either
    monkeypatch.undo()
    monkeypatch.setattr(R.L, "read_table_file", lambda *a, **k: (None, ["x.toml:3: broken"]))
    with pytest.raises(R.RefreshError):
        R.write_cache(result, cache)
    assert sorted(p.name for p in cache.iterdir()) == ["pytorch.toml"]


def test_written_file_passes_the_strict_loader(tmp_path):
    with _index_with_future() as idx:
        result = R.refresh(I.IndexClient([idx.url], timeout=5))
    R.write_cache(result, tmp_path)
    raw, warnings = L.read_table_file(tmp_path / "pytorch.toml", "pytorch", strict=True)
    assert raw is not None and warnings == []
    # a cut-short copy is refused by the loader as a whole (the bundled table is used instead)
    text = (tmp_path / "pytorch.toml").read_text()
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "pytorch.toml").write_text(text[: len(text) // 2])
    m = load_matrices(cache_dir=cut)
    assert m.newest_known("torch") == "2.15.0" and any("cache file ignored" in w for w in m.warnings)


# --------------------------------------------------------------------------- the doctor uses the refreshed data


def test_check_uses_the_refreshed_cache(capsys, tmp_path, monkeypatch):
    from tests.snapfactory import machine, torch

    snap = machine(driver="580.65.06", driver_cuda="13.0", gpus=["NVIDIA H100 80GB HBM3:9.0"],
                   frameworks=[torch("2.16.0", cuda="13.2", cudnn="9.26.0")])
    snap_file = tmp_path / "snap.json"
    snap_file.write_text(json.dumps(snap.to_dict()))
    root = tmp_path / "cache-root"
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(root))

    def ed900():
        code, out, err = run(capsys, "check", "--snapshot", str(snap_file), "--only", "ED900", "--format", "json")
        return [f for f in json.loads(out)["findings"] if f["id"] == "ED900"]

    assert ed900(), "the bundled data does not know torch 2.16.0"
    with _index_with_future() as idx:
        code, out, err = run(capsys, "matrices", "refresh", "--index-url", idx.url)  # default cache dir
    assert code == 0 and (root / "matrices" / "pytorch.toml").exists()
    assert ed900() == []


def test_lock_uses_the_refreshed_cache(capsys, tmp_path, monkeypatch):
    """After a refresh, `envdoctor lock` picks the new release: no code change, only data."""
    root = tmp_path / "cache-root"
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(root))
    args = ["lock", "--cuda", "13.2", "--gpu", "sm_90", "--python-version", "3.12", "--platform", "linux-x86_64",
            "--format", "json"]
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert '"2.16.0"' not in out and "2.15.0" in out
    with _index_with_future() as idx:
        code, _, err = run(capsys, "matrices", "refresh", "--index-url", idx.url)
    assert code == 0, err
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert "2.16.0" in out


def _bundled_without(tmp_path, table: str, needles):
    """A copy of the bundled tables whose ``table`` lacks the rows containing any of ``needles``."""
    import shutil

    d = tmp_path / "bundled"
    shutil.copytree(L.bundled_dir(), d)
    blocks = (d / f"{table}.toml").read_text(encoding="utf-8").split("\n[[")
    kept = [b for b in blocks if not any(n in b for n in needles)]
    assert len(kept) < len(blocks)
    (d / f"{table}.toml").write_text("\n[[".join(kept), encoding="utf-8")
    return d


def test_refresh_learns_skipped_and_patch_releases_idempotently_on_a_lazy_index(tmp_path):
    """Not only newer releases: a jax version between known ones and a tensorflow patch of a known series,
    read from an index without PEP 658 files (range requests); refreshing twice writes the same tables."""
    bundled = _bundled_without(tmp_path, "jax", ['version = "0.4.30"\n', 'jax = "0.4.30"\n'])
    rec = all_recorded()
    tf_wheel = "tensorflow-2.16.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
    assert tf_wheel in rec
    rec.update(bumped(rec, tf_wheel, "2.16.1", "2.16.3"))  # a patch release simulated from the real 2.16.1
    written = []
    with FakeIndex(rec, mode="lazy") as idx:
        for n in (1, 2):
            cache = tmp_path / f"cache{n}"
            result = R.refresh(I.IndexClient([idx.url], timeout=5), date="2026-12-01", bundled_dir=bundled)
            R.write_cache(result, cache)
            written.append({p.name: p.read_text(encoding="utf-8") for p in sorted(cache.iterdir())})
        assert idx.whole_wheel_requests() == []
    assert written[0] == written[1] and set(written[0]) == {"jax.toml", "tensorflow.toml"}
    m = load_matrices(cache_dir=tmp_path / "cache1", bundled_dir=bundled)
    assert m.warnings == []
    jx = m.jax_release("0.4.30")
    assert jx.version == "0.4.30" and jx.jaxlib == "<=0.4.30,>=0.4.27" and jx.requires_python == ">=3.9"
    assert jx.verified.startswith("learned by envdoctor matrices refresh from index metadata on 2026-12-01")
    assert jx.source.endswith("jax-0.4.30-py3-none-any.whl (METADATA read with HTTP range requests)")
    assert jx.plugins["cuda12"].pin == "<=0.4.30,>=0.4.30"
    tf = m.tf_release("2.16.3")
    assert tf.tested == "2.16.3" and tf.version == "2.16" and tf.cuda == m.tf_release("2.16.1").cuda
    assert tf.and_cuda == m.tf_release("2.16.1").and_cuda and tf.verified.startswith("learned by envdoctor")
    assert "2.16.3" in m.tf_release("2.16").versions
    # the learned rows agree with the index they came from
    with FakeIndex(rec, mode="lazy") as idx:
        got = verify(m, I.IndexClient([idx.url], timeout=5), ("jax", "tensorflow"))
    assert got.disagreements == [], [d.line() for d in got.disagreements]


def test_a_defect_on_a_wheel_other_than_the_first_is_found_by_the_sample(capsys):
    """Each release's first wheel is its lowest-CPython Linux x86_64 one; the sample reads the others (every platform
    and Python tag). Two wheels of torch 2.15.0 beside the recorded cp311 one, each with one defect only it carries:
    the cp313 wheel's nccl pin behind a marker that leaves cp313 out, and an aarch64 wheel that claims another
    Requires-Python. Without the sample neither is seen; with it both are, and the report says the sample's size."""
    base = "torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    rec = all_recorded()
    text = rec[base]
    assert "nvidia-nccl-cu13==2.30.7; platform_system == \"Linux\"" in text and "Requires-Python: >=3.11" in text
    rec["torch-2.15.0-cp313-cp313-manylinux_2_28_x86_64.whl"] = text.replace(
        "nvidia-nccl-cu13==2.30.7; platform_system == \"Linux\"",
        "nvidia-nccl-cu13==2.30.7; platform_system == \"Linux\" and python_version < \"3.13\"")
    rec["torch-2.15.0-cp312-cp312-manylinux_2_28_aarch64.whl"] = text.replace("Requires-Python: >=3.11",
                                                                             "Requires-Python: >=3.12")
    with FakeIndex(rec) as idx:
        code0, out0, _ = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "pytorch", "--sample", "0")
        code, out, _ = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "pytorch",
                           "--format", "json")
        _, text_out, _ = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "pytorch")
    assert code0 == 0 and "no disagreements" in out0 and "sample: 0 of the releases' " in out0
    data = json.loads(out)
    got = sorted((d["release"], d["field"], d["table_value"], d["index_value"]) for d in data["disagreements"])
    assert code == 1 and got == [
        ("torch 2.15.0 (torch-2.15.0-cp312-cp312-manylinux_2_28_aarch64.whl)", "requires_python", ">=3.11", ">=3.12"),
        ("torch 2.15.0 (torch-2.15.0-cp313-cp313-manylinux_2_28_x86_64.whl)",
         "nvidia_pins[nvidia-nccl-cu13] (variant cu132)", "==2.30.7", None),
    ], got
    sample = data["sample"]
    assert sample["size"] == 48 and sample["seed"] == 0 and sample["drawn"] == sample["population"] >= 2
    assert f"sample: {sample['drawn']} of the releases' {sample['population']} other wheels" in text_out


def _variant_block(torch: str, name: str) -> str:
    """The [[variant]] row of the bundled pytorch.toml for (torch, name), as text."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "matrices" / "pytorch.toml").read_text(encoding="utf-8")
    for block in text.split("\n[[")[1:]:
        if block.startswith("variant]]") and f'\ntorch = "{torch}"\n' in block and f'\nname = "{name}"\n' in block:
            return "[[" + block
    raise AssertionError(f"no variant {torch} {name}")


def test_the_cp315_wheel_agrees_only_with_a_marker_on_the_cuda_bindings_pin(capsys, tmp_path):
    """torch 2.15.0's cp315 wheel has the same Requires-Dist as its cp311 one, where cuda-bindings holds only for
    `python_version < "3.15"` (both read from the wheels with range requests): for Python 3.15 it pins none. The data
    carries that marker (pin_markers), so the sampled cp315 wheel agrees; the same row without it (a cache overlay)
    disagrees on that wheel alone."""
    rec = all_recorded()
    base = "torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert 'cuda-bindings<14,>=13.0.3; platform_system == "Linux" and python_version < "3.15"' in rec[base]
    rec["torch-2.15.0-cp315-cp315-manylinux_2_28_x86_64.whl"] = rec[base]
    block = _variant_block("2.15", "cu132")
    assert "pin_markers" in block
    cache = tmp_path / "overlay"
    cache.mkdir()
    (cache / "pytorch.toml").write_text('schema = "pytorch/v1"\ncollected = "2026-12-03"\n\n' + "\n".join(
        line for line in block.splitlines() if not line.startswith("pin_markers")) + "\n")
    with FakeIndex(rec) as idx:
        code, out, _ = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "pytorch", "--format", "json")
        code2, out2, _ = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "pytorch", "--format",
                             "json", "--cache-dir", str(cache))
    assert code == 0 and json.loads(out)["disagreements"] == []
    got = [(d["release"], d["field"], d["table_value"], d["index_value"]) for d in json.loads(out2)["disagreements"]]
    assert code2 == 1 and got == [("torch 2.15.0 (torch-2.15.0-cp315-cp315-manylinux_2_28_x86_64.whl)",
                                   "nvidia_pins[cuda-bindings] (variant cu132)", "<14,>=13.0.3", None)], got
