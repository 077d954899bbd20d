"""gate's resolving mode says only what the resolver stated, and the planner judges what the data really says: each
case was seen on real requirement files (a stored copy of their real index metadata is served on 127.0.0.1 by
tests/index_server.py; the resolver's own words for the others were recorded from uv 0.9 and pip 25 on 2026-12-03).

* ``torch==2.3.0+cu121`` without the PyTorch index: not on the indexes the install reads (ED800, as offline), never
  "no wheel for Python" with a pin to a neighbouring release;
* releases older than the data (tensorflow 1.13.1, jax 0.4.13): "older", never "newer than envdoctor's data"; the
  resolver judges them by the index's files, and a pure-Python sdist-only line (jax) does not stop the rest being
  resolved;
* torchvision 0.29.2 accepts torch>=2.14: it installs on Python 3.10 with torch 2.14 (not torch 2.15's Pythons);
* a uv project under another file name (pyproject-cuda.toml) is given to uv as a project, its path sources read from
  its own folder, and nothing of it is built;
* the resolver's wording is matched whatever its case.
"""
from __future__ import annotations

import json

import pytest

from envdoctor.gate.resolve import Resolution, _failure
from tests.cli_run import run
from tests.index_server import FakeIndex
from tests.test_gate_resolve import RESOLVERS, _has_uv, served_files
from tests.test_gate_untrusted import _resolving_env, repo  # noqa: F401 - repo: the shared checkout fixture

PASCAL_470_PY312 = ["--driver", "470.82.01", "--gpu", "sm_61", "--python-version", "3.12"]
A100_535_PY310 = ["--driver", "535.104.05", "--gpu", "sm_80", "--python-version", "3.10"]


def _env(tmp_path, resolver, index_url):
    return _resolving_env(tmp_path, resolver, index_url, ENVDOCTOR_NO_CACHE="1")


def _gate(repo, name, text, *args, env):
    (repo / name).write_text(text)
    p = run("gate", name, *args, "--format", "json", cwd=str(repo), env=env)
    assert p.returncode in (0, 1), p.stderr
    data = json.loads(p.stdout)
    return p.returncode, data["inputs"][0]


def _findings(unit, severity=None):
    return [f for f in unit["findings"] if severity is None or f["severity"] == severity]


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_a_local_version_without_its_index_is_ed800_when_resolving_as_offline(repo, tmp_path, resolver):
    with FakeIndex(served_files(), serve_wheels=True) as idx:
        code, unit = _gate(repo, "requirements.txt", "torch==2.3.0+cu121\n", *A100_535_PY310,
                           env=_env(tmp_path, resolver, idx.url))
    assert unit["resolver"].startswith(resolver), unit["resolver"]
    ids = [f["id"] for f in _findings(unit, "error")]
    assert code == 1 and ids == ["ED800"], unit["findings"]
    said = " ".join([f["message"] for f in unit["findings"]] + [x for f in unit["findings"] for x in f["fix"]])
    assert "nearest release" not in said and "2.3.1" not in said, said
    _code, offline = _gate(repo, "requirements.txt", "torch==2.3.0+cu121\n", *A100_535_PY310, "--offline",
                           env=_env(tmp_path, "off", "http://127.0.0.1:9/simple/"))
    assert [f["id"] for f in _findings(offline, "error")] == ids


def _tf_1_13_1():
    """tensorflow 1.13.1's wheels as the index lists them: CPython 2.7 and 3.3 - 3.7 only (uv's hint, 2026-12-03)."""
    meta = "Metadata-Version: 2.1\nName: tensorflow\nVersion: 1.13.1\n"
    return {f"tensorflow-1.13.1-{t}-manylinux1_x86_64.whl": meta
            for t in ("cp27-cp27mu", "cp33-cp33m", "cp34-cp34m", "cp35-cp35m", "cp36-cp36m", "cp37-cp37m")}


def test_a_release_older_than_the_data_is_older_offline_and_judged_by_the_index_when_resolving(repo, tmp_path):
    # inside the Pythons its series' wheels cover (the index's file names, matrices/gate_old_releases.toml): older,
    # not judged offline
    # (torch 0.4 on Python 3.6: the data starts at torch 1.0)
    code, unit = _gate(repo, "requirements.txt", "torch==0.4.1\n", *A100_535_PY310[:-1], "3.6", "--offline",
                       env=_env(tmp_path, "off", "http://127.0.0.1:9/simple/"))
    (w,) = _findings(unit)
    assert w["id"] == "ED802" and w["severity"] == "warning" and code == 0
    assert "older than envdoctor's data" in w["message"] and "newer" not in w["message"], w["message"]
    assert "without --offline" in " ".join(w["fix"])
    # outside them: no release of the series has a wheel for the target's Python, offline too
    code, unit = _gate(repo, "requirements.txt", "tensorflow==1.13.1\n", *A100_535_PY310, "--offline",
                       env=_env(tmp_path, "off", "http://127.0.0.1:9/simple/"))
    (e,) = _findings(unit)
    assert e["id"] == "ED803" and code == 1 and "Python 3.10" in e["message"] and "<3.8" in e["message"], e["message"]
    if not _has_uv():
        pytest.skip("uv not installed")
    with FakeIndex(_tf_1_13_1(), serve_wheels=True) as idx:
        code, unit = _gate(repo, "requirements.txt", "tensorflow==1.13.1\n", *A100_535_PY310,
                           env=_env(tmp_path, "uv", idx.url))
    errors = _findings(unit, "error")
    assert code == 1 and [f["id"] for f in errors] == ["ED803"], unit["findings"]
    assert "Python 3.10" in errors[0]["message"]
    said = [e["value"] for e in errors[0]["evidence"] if e["fact"] == "uv says"]
    assert said and "matching Python ABI tag" in said[0], errors[0]["evidence"]


def _tf_addons():
    """tensorflow-addons 0.22.0 and 0.23.0 (its last) as the index lists them: CPython 3.9 - 3.11 wheels only."""
    files = {}
    for v in ("0.22.0", "0.23.0"):
        meta = f"Metadata-Version: 2.1\nName: tensorflow-addons\nVersion: {v}\n"
        for n in (9, 10, 11):
            files[f"tensorflow_addons-{v}-cp3{n}-cp3{n}-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"] = meta
    return files


def test_no_release_with_a_wheel_for_the_python_is_ed803_when_resolving_as_offline(repo, tmp_path):
    """uv states the cause of several releases in the plural ("all versions of X have no wheels with a matching
    Python ABI tag"): that is the missing wheel for the target's Python (ED803, as the offline planner says), never a
    conflict between pins (ED804)."""
    _code, offline = _gate(repo, "requirements.txt", "six\ntensorflow-addons\n", *PASCAL_470_PY312, "--offline",
                           env=_env(tmp_path, "off", "http://127.0.0.1:9/simple/"))
    assert [(f["id"], f["locations"][0]["line"]) for f in _findings(offline, "error")] == [("ED803", 2)], offline
    if not _has_uv():
        pytest.skip("uv not installed")
    six = {"six-1.17.0-py2.py3-none-any.whl": "Metadata-Version: 2.1\nName: six\nVersion: 1.17.0\n"}
    with FakeIndex({**_tf_addons(), **six}, serve_wheels=True) as idx:
        code, unit = _gate(repo, "requirements.txt", "six\ntensorflow-addons\n", *PASCAL_470_PY312,
                           env=_env(tmp_path, "uv", idx.url))
    assert unit["resolver"].startswith("uv for Python 3.12"), unit["resolver"]
    errors = _findings(unit, "error")
    assert code == 1 and [(f["id"], f["locations"][0]["line"]) for f in errors] == [("ED803", 2)], unit["findings"]
    assert "Python 3.12" in errors[0]["message"], errors[0]["message"]


def test_an_sdist_only_line_is_not_judged_and_the_rest_still_resolves(repo, tmp_path):
    """jax 0.4.13 is a source archive only (the index's own listing); jaxlib 0.4.13 has wheels up to cp311."""
    if not _has_uv():
        pytest.skip("uv not installed")
    meta = "Metadata-Version: 2.1\nName: jaxlib\nVersion: 0.4.13\nRequires-Python: >=3.8\n"
    files = {f"jaxlib-0.4.13-cp3{n}-cp3{n}-manylinux2014_x86_64.whl": meta for n in (8, 9, 10, 11)}
    with FakeIndex(files, serve_wheels=True, extra_files=["jax-0.4.13.tar.gz"]) as idx:
        code, unit = _gate(repo, "requirements.txt", "jax==0.4.13\njaxlib==0.4.13\n", *PASCAL_470_PY312,
                           env=_env(tmp_path, "uv", idx.url))
    assert unit["resolver"].startswith("uv for Python 3.12"), unit["resolver"]
    errors = _findings(unit, "error")
    assert code == 1 and [(f["id"], f["locations"][0]["line"]) for f in errors] == [("ED803", 2)], unit["findings"]
    assert any("jax==0.4.13" in n["why"] and "source distribution" in n["why"] for n in unit["not_judged"]), unit
    assert not any("newer than" in f["message"] for f in unit["findings"])


def test_torchvision_0_29_2_installs_on_python_3_10_with_torch_2_14(repo, tmp_path):
    code, unit = _gate(repo, "requirements.txt", "torchvision==0.29.2\n", "--cpu", "--python-version", "3.10",
                       "--offline", env=_env(tmp_path, "off", "http://127.0.0.1:9/simple/"))
    torch = [p for p in unit["packages"] if p["name"] == "torch"]
    assert code == 0 and not _findings(unit, "error"), unit["findings"]
    assert torch and torch[0]["version"].startswith("2.14."), unit["packages"]
    # a torchvision that pins one torch still takes that torch's Pythons
    code, unit = _gate(repo, "requirements.txt", "torchvision==0.16.0\n", "--cpu", "--python-version", "3.12",
                       "--offline", env=_env(tmp_path, "off", "http://127.0.0.1:9/simple/"))
    assert code == 1 and [f["id"] for f in _findings(unit, "error")] == ["ED803"], unit["findings"]


def test_a_uv_project_under_another_file_name_is_resolved_and_its_path_sources_never_built(repo, tmp_path):
    if not _has_uv():
        pytest.skip("uv not installed")
    marker = tmp_path / "built"
    proj = repo / "proj"
    proj.mkdir()
    (proj / "setup.py").write_text(f"open({str(marker)!r}, 'w').write('x')\nfrom setuptools import setup\n"
                                   "setup(name='proj', version='1.0')\n")
    with FakeIndex(served_files(), serve_wheels=True) as idx:
        body = ('[project]\nname = "p"\nversion = "0"\nrequires-python = ">=3.9"\n'
                'dependencies = ["torch", "xformers==0.0.20"]\n\n'
                f'[[tool.uv.index]]\nname = "main"\nurl = "{idx.url}"\ndefault = true\n')
        env = _env(tmp_path, "uv", "")
        args = ["--driver", "470.82.01", "--gpu", "sm_61", "--python-version", "3.10", "--allow-index", idx.url]
        code, unit = _gate(repo, "pyproject-cuda.toml", body, *args, env=env)
        assert unit["resolver"].startswith("uv for Python 3.10"), unit["resolver"]
        assert [p["version"] for p in unit["packages"] if p["name"] == "torch"] == ["2.0.1"]
        assert code == 0 and not any(f["id"] == "ED804" for f in unit["findings"]), unit["findings"]
        with_source = body.replace('"xformers==0.0.20"]', '"xformers==0.0.20", "proj"]') + (
            '\n[tool.uv.sources]\nproj = { path = "proj" }\n')
        code, unit = _gate(repo, "pyproject-cuda.toml", with_source, *args, env=env)
    assert not marker.exists()
    assert "PEP 751" not in json.dumps(unit), unit
    assert not any(f["id"] == "ED804" for f in unit["findings"]), unit["findings"]
    assert sorted(p.name for p in repo.iterdir()) == [".git", "proj", "pyproject-cuda.toml"]  # nothing written beside


@pytest.mark.parametrize("said, status, cause", [
    ("  cause: Because jax==0.4.13 has no usable wheels and you require jax==0.4.13 ...\n"
     "hint: Wheels are required for `jax` because Building From Source Is Disabled", "needs-build", "build"),
    ("ERROR: Building source distributions is disabled for jax", "needs-build", None),
    ("  cause: Because TORCH==9.9 Has No Wheels With A Matching Python ABI Tag (e.g., `cp310`)", "failed", "python"),
    # of several releases uv says "have"
    ("  ╰─▶ Because all versions of tensorflow-addons have no wheels with a matching Python ABI tag (e.g., `cp312`)"
     " and you require tensorflow-addons, we can conclude that your requirements are unsatisfiable.", "failed",
     "python"),
    ("  ╰─▶ Because only foo<=1.0 is available and all of foo<=1.0 have no usable wheels ...", "needs-build", "build"),
    ("  cause: Because there is no version of torch==2.3.0+cu121 and you require it", "failed", "missing"),
    # uv wraps its report at the width it finds (COLUMNS, else 80): a cause cut over two lines is still read
    ("  ╰─▶ Because tensorflow==1.13.1 has no wheels with a matching Python ABI\n      tag (e.g., `cp310`) and you"
     " require tensorflow==1.13.1, we can conclude ...", "failed", "python"),
    ("ERROR: No matching distribution found for torch==2.3.0+cu121", "failed", "unstated"),
])
def test_the_resolvers_words_are_read_whatever_their_case_and_only_what_they_state(said, status, cause):
    out = _failure(Resolution(tool="uv", status="failed"), said)
    assert out.status == status
    if cause is not None:
        assert set(out.causes.values()) == {cause}, out.causes


def test_a_conda_pytorch_older_than_the_data_is_a_warning_and_an_unpinned_cudatoolkit_is_named(repo, tmp_path):
    env = _env(tmp_path, "off", "http://127.0.0.1:9/simple/")
    old = "name: e\nchannels: [pytorch, conda-forge]\ndependencies:\n  - python=3.6\n  - cudatoolkit=9.2\n  - pytorch=0.4.1\n"
    code, unit = _gate(repo, "environment.yml", old, *A100_535_PY310[:-1], "3.6", env=env)
    (w,) = _findings(unit)
    assert code == 0 and w["id"] == "ED802" and w["severity"] == "warning", unit["findings"]
    assert "older than envdoctor's data" in w["message"] and "conda" in w["message"], w["message"]
    unpinned = "name: e\nchannels: [pytorch]\ndependencies:\n  - pytorch=2.1.0\n  - cudatoolkit\n"
    code, unit = _gate(repo, "environment.yml", unpinned, *A100_535_PY310, env=env)
    notes = " ".join(unit["assumptions"]) if "assumptions" in unit else json.dumps(unit)
    assert "with cudatoolkit (no CUDA X.Y pinned)" in notes and "without pytorch-cuda / cudatoolkit" not in notes
