"""The curated data files themselves: provenance on every row, schema headers, coverage."""

from __future__ import annotations

import re
import sys

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
    expected = ["1.13"] + [f"2.{i}" for i in range(16)]
    assert versions == expected  # sorted ascending, nothing missing
    for rel in m.pytorch_releases:
        assert rel.patches and rel.patch_rows and len(rel.patches) == len(rel.patch_rows), rel.version
        assert rel.variant("cpu") is not None, rel.version
        cuda = [v for v in rel.variants if v.kind == "cuda"]
        assert len(cuda) >= 2, rel.version
        dflt = rel.default_variant("linux-x86_64")
        assert dflt is not None and dflt.kind == "cuda" and dflt.pypi_default, rel.version
        assert sum(1 for v in rel.variants if v.pypi_default) == 1, rel.version
        for v in cuda:
            assert v.index_url == f"https://download.pytorch.org/whl/{v.name}"
            assert v.local_label == "+" + v.name
            assert v.arch_list and all(a.startswith("sm_") for a in v.arch_list)
            assert v.name == "cu" + v.cuda.replace(".", "")
        SpecifierSet(rel.python)


def test_tensorflow_coverage(m):
    versions = [r.version for r in m.tensorflow_releases]
    assert versions == [f"2.{i}" for i in range(4, 22)]
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
