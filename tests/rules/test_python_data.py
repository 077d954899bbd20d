"""ED500 (Python range of framework releases) and ED900/ED901 (staleness of the compatibility data)."""
from __future__ import annotations

import pytest
from packaging.version import Version

from envdoctor.knowledge import load_matrices
from envdoctor.knowledge.matrices import Matrices
from envdoctor.context import Context
from envdoctor.rules.engine import run_rules, select_rules
from tests.snapfactory import jax, machine, tensorflow, torch


@pytest.fixture(scope="module")
def mat():
    return load_matrices()


def run(snap, mat, only=("ED500", "ED900", "ED901")):
    return run_rules(Context(snap, mat), select_rules(only=list(only)))


def found(fs, rid):
    return [f for f in fs if f.id == rid]


def bump(version: str, part: int) -> str:
    v = Version(version)
    rel = list(v.release) + [0, 0]
    rel[part] += 1
    for i in range(part + 1, 3):
        rel[i] = 0
    return ".".join(str(x) for x in rel[:3])


# --------------------------------------------------------------------------- ED500


def test_tensorflow_2_15_in_a_python_3_12_env(mat):
    """TensorFlow had no Python 3.12 wheels before 2.16 (https://github.com/tensorflow/tensorflow/issues/62003,
    the canonical "No matching distribution found for tensorflow" on 3.12; likewise #85298 for TF 2.8 on 3.13).
    A 2.15 install inside a 3.12 environment was made for another interpreter."""
    snap = machine(frameworks=[tensorflow("2.15.0")], python="3.12.1")
    [f] = found(run(snap, mat), "ED500")
    assert f.severity == "warning"
    assert "tensorflow 2.15.0" in f.message and "3.12.1" in f.message and "<3.12" in f.message
    assert "$ pip install --force-reinstall tensorflow==2.16.1" in f.fix
    assert any(e.fact.startswith("tensorflow 2.15 wheels") and "tensorflow" in e.source for e in f.evidence)


def test_requires_python_in_metadata_excludes_the_interpreter(mat):
    """torch 2.9 declares Requires-Python >=3.10 (its METADATA); found under Python 3.9 it cannot import."""
    fw = torch("2.9.0+cpu")
    fw.requires_python = ">=3.10"
    snap = machine(frameworks=[fw], python="3.9.18")
    [f] = found(run(snap, mat), "ED500")
    assert f.severity == "error" and ">=3.10" in f.message and "3.9.18" in f.message
    cmd = [x for x in f.fix if x.startswith("$ pip install")][0]
    assert "torch==2.8" in cmd and "--index-url https://download.pytorch.org/whl/cpu" in cmd


def test_pure_python_jax_is_only_a_warning(mat):
    jx = jax("0.4.31")
    jx[0].requires_python = ">=3.10"
    snap = machine(frameworks=jx, python="3.9.18")
    fs = found(run(snap, mat), "ED500")
    assert [f.severity for f in fs if f.subject.startswith("jax ")] == ["warning"]


@pytest.mark.parametrize("snap", [
    machine(frameworks=[torch("2.1.2+cu121", cuda="12.1")], python="3.11.7"),
    machine(frameworks=[tensorflow("2.16.1")], python="3.12.1"),
    machine(frameworks=jax("0.10.2"), python="3.12.3"),
    # nightly / source builds and unknown releases are not judged by the data
    machine(frameworks=[torch("2.16.0.dev20261201+cu132", cuda="13.2")], python="3.15.0"),
    machine(frameworks=[torch("2.10.0a0+gite67e3d9", cuda="13.0")], python="3.9.18"),
    machine(frameworks=[tensorflow("2.30.0")], python="3.15.0"),
    machine(frameworks=[torch("2.1.2+cu121", cuda="12.1")], python=""),
])
def test_ed500_silent_cases(snap, mat):
    assert not found(run(snap, mat), "ED500")


def test_conda_environments_are_not_judged_by_pypi_wheels(mat):
    """conda-forge built torch 2.1 for Python 3.12 although PyPI has no cp312 wheel of 2.1."""
    snap = machine(frameworks=[torch("2.1.2")], python="3.12.1")
    snap.python.kind = "conda"
    assert not found(run(snap, mat), "ED500")
    snap.python.kind = "venv"
    [f] = found(run(snap, mat), "ED500")
    assert f.severity == "warning"


# --------------------------------------------------------------------------- ED900


def test_a_new_torch_series_is_a_warning_naming_the_data_date(mat):
    newest = mat.newest_known("torch")
    newer = bump(newest, 1)
    snap = machine(frameworks=[torch(newer + "+cpu")], python="3.12.3")
    [f] = found(run(snap, mat), "ED900")
    assert f.severity == "warning"
    assert newer in f.message and newest in f.message and mat.table_collected["pytorch"] in f.message
    assert f.fix == ["$ envdoctor matrices refresh"]


def test_a_new_patch_of_a_known_series_is_info(mat):
    newest = mat.newest_known("tensorflow")
    snap = machine(frameworks=[tensorflow(bump(newest, 2))], python="3.12.3")
    [f] = found(run(snap, mat), "ED900")
    assert f.severity == "info"


def test_several_new_frameworks_are_one_cause(mat):
    snap = machine(frameworks=[torch(bump(mat.newest_known("torch"), 1) + "+cpu")]
                   + jax(bump(mat.newest_known("jax"), 1)), python="3.12.3")
    fs = found(run(snap, mat), "ED900")
    assert len(fs) == 1 and fs[0].consequences


def test_known_versions_are_silent(mat):
    snap = machine(frameworks=[torch(mat.newest_known("torch") + "+cpu"), tensorflow("2.15.0")]
                   + jax("0.4.30"), python="3.11.7")
    assert not found(run(snap, mat), "ED900")


def test_no_data_no_finding():
    snap = machine(frameworks=[torch("9.9.9+cpu")], python="3.11.7")
    fs = run_rules(Context(snap, Matrices.empty()), select_rules(only=["ED900", "ED901", "ED500"]))
    assert fs == []


# --------------------------------------------------------------------------- ED901


def test_old_data_is_an_info(mat):
    snap = machine(frameworks=[torch("2.1.2+cpu")], python="3.11.7")
    snap.created = "2027-09-01T00:00:00+00:00"
    [f] = found(run(snap, mat), "ED901")
    assert f.severity == "info" and mat.collected in f.message and "2027-09-01" in f.message
    assert f.fix == ["$ envdoctor matrices refresh"]


@pytest.mark.parametrize("created", ["2026-11-29T00:00:00+00:00", "2027-01-15T10:00:00Z"])
def test_fresh_data_is_silent(created, mat):
    snap = machine(frameworks=[torch("2.1.2+cpu")], python="3.11.7")
    snap.created = created
    assert not found(run(snap, mat), "ED901")


def test_unreadable_snapshot_date_does_not_break_the_rule(mat):
    snap = machine(frameworks=[torch("2.1.2+cpu")], python="3.11.7")
    snap.created = "not a date"
    fs = run(snap, mat)
    assert not [f for f in fs if "could not run" in f.message]
    assert all(f.severity == "info" for f in found(fs, "ED901"))
