"""The curated data files themselves: provenance on every row, schema headers, coverage."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from envdoctor.knowledge import TABLES, bundled_dir, gpu_name_tokens, load_matrices

DATA = bundled_dir()


def _raw(table: str) -> dict:
    return tomllib.loads((DATA / f"{table}.toml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return load_matrices(cache_dir=tmp_path_factory.mktemp("no-cache"))


def _rows(table: str):
    data = _raw(table)
    for kind, items in data.items():
        if isinstance(items, list):
            for i, row in enumerate(items):
                yield kind, i, row


@pytest.mark.parametrize("table", TABLES)
def test_every_file_has_schema_and_collected(table):
    data = _raw(table)
    assert data["schema"] == f"{table}/v1"
    assert re.match(r"^\d{4}-\d{2}-\d{2}$", data["collected"])


@pytest.mark.parametrize("table", TABLES)
def test_every_row_has_source_and_verified(table):
    n = 0
    for kind, i, row in _rows(table):
        n += 1
        assert isinstance(row.get("source"), str) and row["source"].strip(), f"{table} [[{kind}]] #{i} has no source"
        assert isinstance(row.get("verified"), str) and row["verified"].strip(), f"{table} [[{kind}]] #{i} has no verified"
        # an unverified row must say so up front, not in the middle
        if row["verified"].lower().startswith(("not verified", "unverified", "not read")):
            assert row["verified"].startswith("UNVERIFIED"), row["verified"]
    assert n > 0


def test_bundled_data_loads_without_warnings(m):
    assert m.warnings == []
    assert set(m.sources) == set(TABLES)
    assert all(str(DATA) in src for src in m.sources.values())
    assert re.match(r"^\d{4}-\d{2}-\d{2}$", m.collected)


def test_no_free_text_where_typed_values_belong():
    # e.g. the reference's 'pypi_default_cuda = "11.7 (nvidia-cuda-runtime-cu11==11.7.99)"' must be split up
    for kind, _i, row in _rows("pytorch"):
        if kind == "variant" and row.get("cuda"):
            Version(row["cuda"])
            assert re.match(r"^\d+\.\d+$", row["cuda"])
        if kind == "release":
            SpecifierSet(row["python"])
    for _k, _i, row in _rows("cuda_driver"):
        for f in ("driver_linux", "driver_windows", "min_driver_linux"):
            if f in row:
                assert re.match(r"^\d+(\.\d+)*$", row[f]), row[f]


# --------------------------------------------------------------------------- coverage


def test_cuda_coverage_10_0_to_13_x(m):
    series = set(m.cuda_series())
    expected = {"10.0", "10.1", "10.2"} | {f"11.{i}" for i in range(9)} | {f"12.{i}" for i in (0, 1, 2, 3, 4, 5, 6, 8, 9)} \
        | {f"13.{i}" for i in range(6)}
    assert expected <= series
    assert "12.7" not in series  # there was no CUDA 12.7
    for s in expected:
        assert m.cuda_release(s) is not None and m.cuda_release(s).ga, s
    # every toolkit with a known Linux driver has one that is a version
    assert sum(1 for r in m.cuda_releases if r.driver_linux) >= 55


def test_gpu_coverage(m):
    assert len(m.gpus) >= 150
    names = [gpu_name_tokens(g.name) for g in m.gpus]
    assert len(names) == len(set(names)), "two rows normalise to the same name"
    for family in ("5090", "4090", "3090", "2080", "1080", "1660", "a100", "h100", "h200", "l40s", "b200", "t4", "v100",
                   "p100", "k80", "gb10", "orin", "xavier", "nano"):
        assert any(family in " ".join(gpu_name_tokens(g.name)) for g in m.gpus), family
    assert sum(1 for g in m.gpus if g.segment and g.segment.endswith("laptop")) >= 20


def test_every_gpu_spelling_resolves_to_its_own_row(m):
    for g in m.gpus:
        for spelling in [g.name] + list(g.aliases):
            assert m.gpu_info(spelling) is g, spelling
            assert m.cc_for_gpu_name(spelling.upper()) == g.cc, spelling


def test_arch_coverage(m):
    for cc in ("3.5", "3.7", "5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9",
               "9.0", "10.0", "10.3", "11.0", "12.0", "12.1"):
        assert m.arch(cc) is not None, cc
    for g in m.gpus:
        assert m.arch(g.cc) is not None, f"{g.name}: no arch row for cc {g.cc}"


def test_pytorch_coverage(m):
    versions = [r.version for r in m.pytorch_releases]
    expected = [f"1.{i}" for i in range(14)] + [f"2.{i}" for i in range(16)]
    assert versions == expected  # sorted ascending, nothing missing
    for rel in m.pytorch_releases:
        old = Version(rel.version) < Version("1.13")  # read from the default index's wheels and pytorch/builder only
        if not old:
            assert rel.patches and rel.patch_rows and len(rel.patches) == len(rel.patch_rows), rel.version
            assert rel.variant("cpu") is not None, rel.version
        cuda = [v for v in rel.variants if v.kind == "cuda"]
        assert len(cuda) >= (1 if old else 2), rel.version
        dflt = rel.default_variant("linux-x86_64")
        assert dflt is not None and dflt.kind == "cuda" and dflt.pypi_default, rel.version
        assert sum(1 for v in rel.variants if v.pypi_default) == 1, rel.version
        for v in cuda:
            assert v.index_url == f"https://download.pytorch.org/whl/{v.name}"
            assert v.local_label == "+" + v.name
            # old builds embed PTX of their first arch ("3.7+PTX"): written as compute_XY after its sm_XY
            assert v.arch_list and all(a.startswith("sm_") or (old and a.startswith("compute_")) for a in v.arch_list)
            assert v.arch_list[-1].startswith("sm_")
            assert v.name == "cu" + v.cuda.replace(".", "")
        SpecifierSet(rel.python)


def test_tensorflow_coverage(m):
    versions = [r.version for r in m.tensorflow_releases]
    assert versions == ["1.13", "1.14", "1.15"] + [f"2.{i}" for i in range(0, 22)]
    for r in m.tensorflow_releases:
        assert r.cuda and r.cudnn and r.gpu_platforms
        assert bool(r.and_cuda) == (Version(r.version) >= Version("2.14")), r.version


def test_jax_coverage(m):
    versions = [Version(r.version) for r in m.jax_releases]
    assert versions == sorted(versions)
    assert Version("0.4.26") in versions and Version("0.12.0.1") in versions
    assert len(versions) >= 15
    for r in m.jax_releases:
        assert "cuda12" in r.plugins, r.version
        assert ("cuda13" in r.plugins) == (Version(r.version) >= Version("0.7.2")), r.version


def test_cudnn_coverage(m):
    for v in ("7.6.5", "8.0.5", "8.2.4", "8.6.0", "8.9.7", "9.1.0", "9.10.2", "9.11.0", "9.12.0", "9.17.0", "9.28.1"):
        assert m.cudnn_release(v) is not None, v
    assert m.cudnn_release("10.0.0") is None


def test_incompatibility_keys_unique():
    keys = [row["key"] for kind, _i, row in _rows("incompatibilities") if kind == "fact"]
    assert len(keys) == len(set(keys))
    assert "triton-min-cc" in keys


def test_wheel_force_include_path_matches():
    # pyproject force-includes <repo>/matrices as envdoctor/_data/matrices; bundled_dir() finds one of them
    assert DATA.is_dir()
    assert {p.stem for p in DATA.glob("*.toml")} >= set(TABLES)


# --------------------------------------------------------------------------- releases lock accepts


def _lock(monkeypatch, tmp_path, capsys, *args, python="3.11"):
    from envdoctor.entry import main

    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "empty-cache"))
    with pytest.raises(SystemExit) as exc:
        main(["lock", "--driver", "580.95.05", "--python-version", python, *args])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


@pytest.mark.parametrize("version", ["2.12.1", "2.13.1", "2.14.1", "2.15.0.post1", "2.15.1", "2.16.2", "2.17.1",
                                     "2.18.1", "2.19.1"])
def test_lock_accepts_tensorflow_patch_releases(monkeypatch, tmp_path, capsys, version):
    code, out, err = _lock(monkeypatch, tmp_path, capsys, "--gpu", "NVIDIA A100-SXM4-80GB", f"--tensorflow={version}")
    assert code == 0, err
    assert re.search(rf"^tensorflow(\[and-cuda\])?=={re.escape(version)}\s", out, re.M), out


def test_tensorflow_2_15_patches_carry_their_own_and_cuda_pins(m):
    """2.15.0 pinned tensorrt in [and-cuda]; 2.15.0.post1 and 2.15.1 dropped it (their own metadata)."""
    assert "tensorrt" in m.tf_release("2.15.0").and_cuda
    for v in ("2.15.0.post1", "2.15.1"):
        rel = m.tf_release(v)
        assert rel.tested == v and "tensorrt" not in rel.and_cuda
        assert rel.and_cuda["nvidia-cudnn-cu12"] == "==8.9.4.25" and "METADATA" in rel.source
        assert not rel.unverified


@pytest.mark.parametrize("version", ["0.4.27", "0.4.29", "0.4.33", "0.4.36", "0.5.1", "0.6.1", "0.8.1", "0.8.2",
                                     "0.9.0.1", "0.9.1", "0.10.1", "0.11.1"])
def test_lock_accepts_jax_releases_since_0_4_26(monkeypatch, tmp_path, capsys, version):
    code, out, err = _lock(monkeypatch, tmp_path, capsys, "--gpu", "NVIDIA A100-SXM4-80GB", f"--jax={version}",
                           python="3.12")
    assert code == 0, err
    assert re.search(rf"^jax\[cuda1[23]\]=={re.escape(version)}\s", out, re.M), out


def test_jax_rows_cover_every_release_since_0_4_26(m):
    have = {r.version for r in m.jax_releases}
    # every release on the index from 0.4.26 to 0.12.0.1 (index page read 2026-12-01; 0.4.32 is yanked there)
    for v in ("0.4.26", "0.4.27", "0.4.28", "0.4.29", "0.4.30", "0.4.31", "0.4.33", "0.4.34", "0.4.35", "0.4.36",
              "0.4.37", "0.4.38", "0.5.0", "0.5.1", "0.5.2", "0.5.3", "0.6.0", "0.6.1", "0.6.2", "0.7.0", "0.7.1",
              "0.7.2", "0.8.0", "0.8.1", "0.8.2", "0.8.3", "0.9.0", "0.9.0.1", "0.9.1", "0.9.2", "0.10.0", "0.10.1",
              "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.12.0.1"):
        assert v in have, v
    assert m.jax_release("0.4.31").jaxlib == "<=0.4.31,>=0.4.30"


def test_aarch64_lock_gives_torch_2_15_with_cuda_toolkit_pins_for_gb10(monkeypatch, tmp_path, capsys):
    code, out, err = _lock(monkeypatch, tmp_path, capsys, "--platform", "linux-aarch64", "--gpu", "NVIDIA GB10",
                           "--torch", "2.15", "--format", "json")
    assert code == 0, err
    import json

    pick = json.loads(out)["lock"]["picks"][0]
    assert pick["version"] == "2.15.0" and pick["kind"] == "cuda"
    assert pick["pins"]["cuda-toolkit"] == "==13.2.2" and pick["pins_known"] == "metadata"


def test_aarch64_default_is_the_cuda_build_from_2_11(m):
    for series, name in (("2.11", "cu130"), ("2.12", "cu130"), ("2.13", "cu130"), ("2.14", "cu130"), ("2.15", "cu132")):
        rel = m.torch_release(series + ".0")
        dv = rel.default_variant("linux-aarch64")
        assert dv is not None and dv.name == name and "linux-aarch64" in dv.platforms
        assert "aarch64" in rel.pypi_default_note and "METADATA" in rel.source
    assert m.torch_release("2.10.0").default_variant("linux-aarch64").kind == "cpu"


def test_corrected_rows(m):
    assert SpecifierSet(m.torch_release("1.13.0").python_spec("1.13.0").__str__()).contains("3.11")
    for series in ("2.13", "2.14"):
        assert m.torch_variant(series + ".0", "cu130").cuda_toolkit == "13.0.3"


def test_docs_coverage_table_is_generated_from_the_data(m):
    from envdoctor.knowledge.coverage import BEGIN, END, coverage_markdown

    doc = (Path(__file__).resolve().parents[1] / "docs" / "matrices.md").read_text(encoding="utf-8")
    assert BEGIN in doc and END in doc
    shown = doc[doc.index(BEGIN):doc.index(END) + len(END)]
    assert shown == coverage_markdown(m), "docs/matrices.md coverage table is stale: regenerate it " \
                                          "(python -m envdoctor.knowledge.coverage)"
    # and the table says what the data holds
    assert f"| `jax` | jax 0.4.26 → {m.newest_known('jax')} ({len(m.jax_releases)} releases" in shown


# GPU names NVML prints that had no row (names as NVIDIA's 595.45.04 supported-GPU list spells them)
_DRIVER_LIST_GPUS = {
    "NVIDIA GeForce RTX 5090 D": "12.0", "NVIDIA GeForce RTX 5090 D v2": "12.0", "NVIDIA RTX PRO 2000 Blackwell": "12.0",
    "NVIDIA RTX PRO 4000 Blackwell SFF Edition": "12.0", "NVIDIA RTX PRO 5000 Blackwell Generation Laptop GPU": "12.0",
    "NVIDIA RTX PRO 500 Blackwell Generation Laptop GPU": "12.0", "NVIDIA A800 40GB Active": "8.0",
    "NVIDIA CMP 170HX": "8.0", "NVIDIA H800": "9.0", "NVIDIA H20": "9.0", "NVIDIA A10G": "8.6",
}


@pytest.mark.parametrize("name", sorted(_DRIVER_LIST_GPUS))
def test_gpu_names_have_rows_read_from_the_driver_list_or_pci_ids(m, name):
    g = m.gpu_info(name)
    assert g is not None and g.cc == _DRIVER_LIST_GPUS[name], name
    assert not g.unverified and "pci.ids" in g.source
    # the chip pci.ids names must be one its [[arch]] row lists
    chip = re.search(r"\b(G[A-Z]\d{3})\b", g.verified).group(1)
    assert chip in m.arch(g.cc).chips, (name, chip)


def test_no_rtx_pro_6000_blackwell_laptop_row_is_invented(m):
    # NVIDIA's 595.45.04 list and pci.ids have no RTX PRO 6000 Blackwell laptop part (5000 is the largest)
    assert m.gpu_info("NVIDIA RTX PRO 6000 Blackwell Generation Laptop GPU") is None


def test_lock_knows_the_rtx_5090_d_v2(monkeypatch, tmp_path, capsys):
    code, out, err = _lock(monkeypatch, tmp_path, capsys, "--gpu", "NVIDIA GeForce RTX 5090 D v2", "--torch", "2.7",
                           "--format", "json")
    assert code == 0, err
    import json

    pick = json.loads(out)["lock"]["picks"][0]
    # before its row existed lock refused the name (exit 2: unknown GPU); now it is a cc 12.0 part
    assert pick["kind"] == "cuda" and "sm_120" in pick["archs"], pick


def test_jax_plugin_driver_and_cc_cite_the_guide_of_their_own_release(m):
    """Rows whose driver_min / cc_min were read per release cite installation.md at that release's own tag."""
    cited = 0
    for r in m.jax_releases:
        for p in r.plugins.values():
            tags = re.findall(r"/jax-ml/jax/blob/jax-v([^/]+)/docs/installation\.md", p.source)
            if tags:
                cited += 1
                assert tags == [p.jax] and not p.unverified, (p.jax, p.name, tags)
                assert (p.cc_min, p.driver_min) == {"cuda12": ("5.2", "525"), "cuda13": ("7.5", "580")}[p.name]
            elif p.unverified:
                assert "could not be read" in p.verified, (p.jax, p.name)
    assert cited >= 23
